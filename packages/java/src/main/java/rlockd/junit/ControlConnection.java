package rlockd.junit;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The fixture's own connection to its server, for the clock, introspection and faults.
 *
 * <p>Hand-written rather than borrowed from a driver: it needs only RESP2's five reply types
 * over TCP or a unix socket, and without a driver dependency the extension serves Jedis,
 * Lettuce and Redisson users alike, at whatever driver version they pin.
 */
final class ControlConnection implements AutoCloseable {
    private static final byte[] CRLF = {'\r', '\n'};

    private final SocketChannel channel;
    private final InputStream in;
    private final OutputStream out;

    private ControlConnection(SocketChannel channel) {
        this.channel = channel;
        this.in = new BufferedInputStream(Channels.newInputStream(channel));
        this.out = new BufferedOutputStream(Channels.newOutputStream(channel));
    }

    static ControlConnection open(SocketAddress address) throws IOException {
        SocketChannel channel =
                address instanceof UnixDomainSocketAddress
                        ? SocketChannel.open(StandardProtocolFamily.UNIX)
                        : SocketChannel.open();
        try {
            channel.connect(address);
        } catch (IOException e) {
            channel.close();
            throw e;
        }
        return new ControlConnection(channel);
    }

    static SocketAddress tcp(String host, int port) {
        return new InetSocketAddress(host, port);
    }

    /**
     * Sends one command, each argument as a bulk string, and answers its reply: a String
     * (simple or bulk), a Long, null, or a List of those; an error reply is thrown.
     */
    synchronized Object call(Object... args) throws IOException {
        out.write(('*' + Integer.toString(args.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (Object arg : args) {
            byte[] bytes = String.valueOf(arg).getBytes(StandardCharsets.UTF_8);
            out.write(('$' + Integer.toString(bytes.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(bytes);
            out.write(CRLF);
        }
        out.flush();
        return readReply();
    }

    private Object readReply() throws IOException {
        int type = in.read();
        if (type == -1) {
            throw new EOFException("the server closed the control connection");
        }
        String line = readLine();
        switch (type) {
            case '+':
                return line;
            case '-':
                throw new RlockdException(line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int length = Integer.parseInt(line);
                if (length < 0) {
                    return null;
                }
                byte[] bytes = in.readNBytes(length);
                if (bytes.length < length || in.read() != '\r' || in.read() != '\n') {
                    throw new EOFException("the server closed the control connection");
                }
                return new String(bytes, StandardCharsets.UTF_8);
            }
            case '*': {
                int count = Integer.parseInt(line);
                if (count < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    items.add(readReply());
                }
                return items;
            }
            default:
                throw new IOException("not a RESP2 reply: " + (char) type + line);
        }
    }

    private String readLine() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) != '\n') {
            if (b == -1) {
                throw new EOFException("the server closed the control connection");
            }
            line.write(b);
        }
        String text = line.toString(StandardCharsets.UTF_8);
        return text.endsWith("\r") ? text.substring(0, text.length() - 1) : text;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
