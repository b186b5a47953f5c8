// The seed article's C++ lock client (seed 000), written with hiredis:
// try_lock EVALs the reentrant hash-lock script and, while another owner
// holds the lock, waits on a std::future for the unlock message on
// SUBSCRIBE hd_dlock_chan:<name>, with a timeout; unlock EVALs the script
// that PUBLISHes it. The scripts are read verbatim from
// src/command/scripting/lock_scripts/dlock_{lock,unlock}.lua.
//
// Usage: dlock PORT SCRIPT_DIR. Runs the scenarios against the server on
// 127.0.0.1:PORT, prints what it measured, and `PASS ...` when all held.
// A failed check prints `FAIL ...` and exits 1.

#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <random>
#include <sstream>
#include <string>
#include <thread>

namespace {

const std::string CHANNEL_PREFIX = "hd_dlock_chan:";

std::string g_port;
std::string g_lock_script;
std::string g_unlock_script;

long long now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void fail(const std::string &what) {
    std::printf("FAIL %s\n", what.c_str());
    std::fflush(stdout);
    std::exit(1);
}

void check(bool ok, const std::string &what) {
    if (!ok) fail(what);
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot read " + path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// Random per process, as the article's uuid: the owner id is it plus the pid.
std::string process_uuid() {
    std::random_device rd;
    char buf[33];
    for (int i = 0; i < 16; i++) std::snprintf(buf + 2 * i, 3, "%02x", static_cast<unsigned>(rd() & 0xff));
    return std::string(buf, 32);
}

std::string owner_id() {
    static const std::string uuid = process_uuid();
    return uuid + std::to_string(getpid());
}

redisContext *connect() {
    redisContext *c = redisConnect("127.0.0.1", std::atoi(g_port.c_str()));
    if (c == nullptr || c->err) fail("connect to port " + g_port);
    return c;
}

// One command's reply, owned.
struct Reply {
    redisReply *r;
    explicit Reply(void *p) : r(static_cast<redisReply *>(p)) {
        if (r == nullptr) fail("connection lost");
    }
    ~Reply() { freeReplyObject(r); }
    Reply(const Reply &) = delete;
    Reply &operator=(const Reply &) = delete;
};

// A connection subscribed to one lock's unlock channel.
class Subscription {
  public:
    explicit Subscription(const std::string &channel) : ctx_(connect()) {
        Reply confirm(redisCommand(ctx_, "SUBSCRIBE %s", channel.c_str()));
        check(confirm.r->type == REDIS_REPLY_ARRAY && confirm.r->elements == 3, "SUBSCRIBE confirmation");
    }
    ~Subscription() { redisFree(ctx_); }
    Subscription(const Subscription &) = delete;
    Subscription &operator=(const Subscription &) = delete;

    // Waits up to `ms` for a message; true when one came. A wait that
    // times out leaves a reader blocked in hiredis: closing the socket
    // ends it, and the subscription is spent.
    bool wait(long long ms) {
        redisContext *ctx = ctx_;
        std::future<int> message = std::async(std::launch::async, [ctx] {
            void *raw = nullptr;
            if (redisGetReply(ctx, &raw) != REDIS_OK) return -1;
            Reply m(raw);
            bool is_message = m.r->type == REDIS_REPLY_ARRAY && m.r->elements == 3 &&
                              std::string(m.r->element[0]->str) == "message";
            return is_message ? std::atoi(m.r->element[2]->str) : -1;
        });
        if (message.wait_for(std::chrono::milliseconds(ms)) == std::future_status::timeout) {
            shutdown(ctx_->fd, SHUT_RDWR);
            message.get();
            spent_ = true;
            return false;
        }
        // The article's unlock message is always 0.
        check(message.get() == 0, "unlock message payload 0");
        return true;
    }

    bool spent() const { return spent_; }

  private:
    redisContext *ctx_;
    bool spent_ = false;
};

// One EVAL of the lock script: -1 when taken (or re-entered), else the
// lock's remaining TTL in ms.
long long lock_once(redisContext *c, const std::string &name, int ttl) {
    std::string ttl_arg = std::to_string(ttl);
    std::string id = owner_id();
    const char *argv[] = {"EVAL", g_lock_script.c_str(), "1", name.c_str(), ttl_arg.c_str(), id.c_str()};
    Reply r(redisCommandArgv(c, 6, argv, nullptr));
    if (r.r->type == REDIS_REPLY_NIL) return -1;
    check(r.r->type == REDIS_REPLY_INTEGER, "lock script returns nil or a PTTL");
    return r.r->integer;
}

// The article's try_lock: 0 when held within `timeout` ms, else -1. It
// subscribes before each attempt, so an unlock between a failed attempt
// and the wait still wakes it.
int try_lock(redisContext *c, const std::string &name, int ttl, int timeout) {
    if (timeout <= 0 || ttl < 0) return -1;
    long long deadline = now_ms() + timeout;
    while (true) {
        Subscription sub(CHANNEL_PREFIX + name);
        long long pttl = lock_once(c, name, ttl);
        if (pttl < 0) return 0;
        long long left = deadline - now_ms();
        if (left <= 0) return -1;
        // No message comes when the holder's lease runs out: retry then.
        sub.wait(std::min(left, std::max(pttl, 1LL)));
    }
}

// The article's unlock: 1 released (or not locked), 0 one re-entry
// released, -1 (nil) held by another owner.
int unlock(redisContext *c, const std::string &name, int ttl) {
    std::string channel = CHANNEL_PREFIX + name;
    std::string ttl_arg = std::to_string(ttl);
    std::string id = owner_id();
    const char *argv[] = {"EVAL", g_unlock_script.c_str(), "2", name.c_str(), channel.c_str(),
                          "0", ttl_arg.c_str(), id.c_str()};
    Reply r(redisCommandArgv(c, 8, argv, nullptr));
    if (r.r->type == REDIS_REPLY_NIL) return -1;
    check(r.r->type == REDIS_REPLY_INTEGER, "unlock script returns nil or an integer");
    return static_cast<int>(r.r->integer);
}

std::string command_text(redisContext *c, const char *format, const std::string &key, const std::string &arg = "") {
    Reply r(arg.empty() ? redisCommand(c, format, key.c_str()) : redisCommand(c, format, key.c_str(), arg.c_str()));
    if (r.r->type == REDIS_REPLY_INTEGER) return std::to_string(r.r->integer);
    if (r.r->type == REDIS_REPLY_NIL) return "(nil)";
    return std::string(r.r->str, r.r->len);
}

// Runs `child` in a forked process (another owner id) and returns what it
// wrote to its pipe, after checking that it exited 0.
template <typename Parent, typename Child>
std::string with_other_process(Parent parent, Child child) {
    int fds[2];
    check(pipe(fds) == 0, "pipe");
    std::fflush(stdout);
    pid_t pid = fork();
    check(pid >= 0, "fork");
    if (pid == 0) {
        close(fds[0]);
        std::string out = child();
        check(write(fds[1], out.data(), out.size()) == static_cast<ssize_t>(out.size()), "pipe write");
        std::_Exit(0);
    }
    close(fds[1]);
    parent();
    std::string got;
    char buf[256];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) got.append(buf, n);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other process failed: " + got);
    return got;
}

void acquire_and_reentry(redisContext *c) {
    const std::string name = "cpp:reentry";
    check(try_lock(c, name, 30000, 1000) == 0, "first acquire");
    check(try_lock(c, name, 30000, 1000) == 0, "re-entry");
    check(command_text(c, "HGET %s %s", name, owner_id()) == "2", "hold count 2 after re-entry");
    std::string refused = with_other_process([] {}, [&] {
        redisContext *other = connect();
        int got = try_lock(other, name, 30000, 200);
        int unlocked = unlock(other, name, 30000);
        return std::to_string(got) + " " + std::to_string(unlocked);
    });
    check(refused == "-1 -1", "another process neither takes nor unlocks it, got " + refused);
    check(unlock(c, name, 30000) == 0, "first unlock leaves one hold");
    long long ttl = std::stoll(command_text(c, "PTTL %s", name));
    check(ttl > 25000, "the unlock renewed the lease");
    check(unlock(c, name, 30000) == 1, "second unlock releases");
    check(command_text(c, "EXISTS %s", name) == "0", "lock key gone");
    std::printf("ok acquire, re-entry (count 2), refused to another process, released in two unlocks\n");
}

void woken_by_unlock(redisContext *c) {
    const std::string name = "cpp:wake";
    const int timeout = 10000;
    check(try_lock(c, name, 30000, 1000) == 0, "holder acquires");
    long long released = 0;
    std::string reply = with_other_process(
        [&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            released = now_ms();
            check(unlock(c, name, 30000) == 1, "holder releases");
        },
        [&] {
            redisContext *other = connect();
            int got = try_lock(other, name, 30000, timeout);
            long long at = now_ms();
            unlock(other, name, 30000);
            return std::to_string(got) + " " + std::to_string(at);
        });
    int got = 0;
    long long acquired = 0;
    check(std::sscanf(reply.c_str(), "%d %lld", &got, &acquired) == 2 && got == 0, "waiter acquires: " + reply);
    long long late = acquired - released;
    std::printf("measured waiter woken %lld ms after unlock (timeout %d ms)\n", late, timeout);
    check(late < 250, "woken by the message within ms, not after " + std::to_string(late));
}

void times_out_when_nobody_unlocks(redisContext *c) {
    const std::string name = "cpp:timeout";
    const int timeout = 500;
    check(try_lock(c, name, 30000, 1000) == 0, "holder acquires");
    std::string reply = with_other_process([] {}, [&] {
        redisContext *other = connect();
        long long asked = now_ms();
        int got = try_lock(other, name, 30000, timeout);
        return std::to_string(got) + " " + std::to_string(now_ms() - asked);
    });
    int got = 0;
    long long waited = 0;
    check(std::sscanf(reply.c_str(), "%d %lld", &got, &waited) == 2 && got == -1, "waiter times out: " + reply);
    std::printf("measured waiter gave up after %lld ms (timeout %d ms)\n", waited, timeout);
    check(waited >= timeout && waited < timeout + 1000, "gave up at its timeout");
    check(unlock(c, name, 30000) == 1, "holder releases");
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 3) fail("usage: dlock PORT SCRIPT_DIR");
    g_port = argv[1];
    g_lock_script = read_file(std::string(argv[2]) + "/dlock_lock.lua");
    g_unlock_script = read_file(std::string(argv[2]) + "/dlock_unlock.lua");
    redisContext *c = connect();
    acquire_and_reentry(c);
    woken_by_unlock(c);
    times_out_when_nobody_unlocks(c);
    redisFree(c);
    std::printf("PASS seed C++ client: 3 scenarios\n");
    return 0;
}
