//! One client connection: read what has arrived, run every complete
//! request in order, and answer the whole batch with one write.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client::{Client, ClientHandle};
use crate::command::{dispatch, forget_transaction};
use crate::error::CmdError;
use crate::protocol::{Reply, next_request};
use crate::server::Shared;

const READ_CHUNK: usize = 16 * 1024;
/// Replies of a long pipeline are flushed at this size rather than held.
const FLUSH_AT: usize = 1024 * 1024;

pub async fn serve(
    shared: Arc<Shared>,
    mut stream: TcpStream,
    addr: SocketAddr,
    laddr: SocketAddr,
) {
    let _ = stream.set_nodelay(true);
    let id = shared.next_client_id();
    let handle = Arc::new(ClientHandle::new(id, addr, laddr, shared.now_ms()));
    shared.clients.insert(id, handle.clone());
    let authenticated = shared.config.read().requirepass.is_none();
    let mut client = Client::new(handle.clone(), authenticated);

    let _ = run(&shared, &mut client, &mut stream).await;

    forget_transaction(&shared, &mut client);
    shared.clients.remove(&id);
}

async fn run(shared: &Shared, client: &mut Client, stream: &mut TcpStream) -> std::io::Result<()> {
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut output = BytesMut::with_capacity(READ_CHUNK);
    let handle = client.handle.clone();
    loop {
        if input.capacity() - input.len() < READ_CHUNK / 4 {
            input.reserve(READ_CHUNK);
        }
        let read = tokio::select! {
            r = stream.read_buf(&mut input) => r?,
            _ = handle.killed() => return Ok(()),
        };
        if read == 0 {
            return Ok(());
        }
        shared
            .stats
            .net_input_bytes
            .fetch_add(read as u64, Ordering::Relaxed);
        handle.info.lock().last_interaction_ms = shared.now_ms();

        let mut closing = false;
        loop {
            match next_request(&mut input) {
                Ok(Some(args)) => {
                    let reply = dispatch(shared, client, &args);
                    reply.encode(client.protocol, &mut output);
                    if client.close_after_reply {
                        closing = true;
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    Reply::Error(CmdError::Other(e.message())).encode(client.protocol, &mut output);
                    closing = true;
                    break;
                }
            }
            if output.len() >= FLUSH_AT {
                flush(shared, stream, &mut output).await?;
            }
        }
        flush(shared, stream, &mut output).await?;
        if closing || handle.is_killed() {
            return Ok(());
        }
    }
}

async fn flush(
    shared: &Shared,
    stream: &mut TcpStream,
    output: &mut BytesMut,
) -> std::io::Result<()> {
    if output.is_empty() {
        return Ok(());
    }
    stream.write_all(output).await?;
    shared
        .stats
        .net_output_bytes
        .fetch_add(output.len() as u64, Ordering::Relaxed);
    output.clear();
    Ok(())
}
