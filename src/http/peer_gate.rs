//! The peer listener's bound on strangers. A connection is a stranger until one of its
//! requests passes the cluster credential check (`idnode_raft`'s `OnVerified` hook); members
//! pass on their first request, within milliseconds, and keep their connections. Strangers
//! are counted per source IP and in total, each may stay unauthenticated for
//! [`AUTH_WITHIN`] (the header read timeout hyper does not arm under `axum::serve`), and a
//! new connection beyond a cap closes the oldest stranger of that source (or of the busiest
//! source) rather than being refused: a flood can hold at most the caps' worth of sockets,
//! and can never keep a member's new connection out.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use axum::serve::{IncomingStream, Listener};
use futures::task::AtomicWaker;
use idnode_raft::OnVerified;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Unauthenticated connections one source IP may hold.
pub const PER_SOURCE: usize = 64;
/// Unauthenticated connections all sources together may hold.
pub const TOTAL: usize = 1024;
/// How long a connection may take to get a request authenticated, its headers included.
pub const AUTH_WITHIN: Duration = Duration::from_secs(10);

const PENDING: u8 = 0;
const AUTHENTICATED: u8 = 1;
/// Closed by a cap or the deadline, or gone.
const OUT: u8 = 2;

struct Slot {
    seq: u64,
    ip: IpAddr,
    state: AtomicU8,
    /// The connection's task, woken when the slot is closed from outside.
    waker: AtomicWaker,
}

impl Slot {
    fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }
}

#[derive(Default)]
struct Table {
    by_ip: HashMap<IpAddr, VecDeque<Arc<Slot>>>,
    total: usize,
    next_seq: u64,
}

impl Table {
    /// Closes the oldest stranger from `ip`. State changes happen only under the table's lock.
    fn close_oldest(&mut self, ip: IpAddr) {
        let Some(queue) = self.by_ip.get_mut(&ip) else { return };
        if let Some(slot) = queue.pop_front() {
            self.total -= 1;
            slot.state.store(OUT, Ordering::Release);
            slot.waker.wake();
        }
        if queue.is_empty() {
            self.by_ip.remove(&ip);
        }
    }
}

/// The count of strangers on one listener.
#[derive(Clone)]
pub struct Strangers {
    table: Arc<Mutex<Table>>,
    per_source: usize,
    total: usize,
    auth_within: Duration,
}

impl Strangers {
    pub fn new(per_source: usize, total: usize, auth_within: Duration) -> Self {
        Strangers { table: Arc::default(), per_source, total, auth_within }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new connection from `ip`, counted until it authenticates or closes.
    fn admit(&self, ip: IpAddr) -> Arc<Slot> {
        let mut t = self.lock();
        t.next_seq += 1;
        let slot = Arc::new(Slot { seq: t.next_seq, ip, state: AtomicU8::new(PENDING), waker: AtomicWaker::new() });
        let queue = t.by_ip.entry(ip).or_default();
        queue.push_back(slot.clone());
        let crowded = queue.len() > self.per_source;
        t.total += 1;
        if crowded {
            tracing::debug!(%ip, "peer listener: too many unauthenticated connections from one source, closing its oldest");
            t.close_oldest(ip);
        }
        if t.total > self.total {
            let busiest = t.by_ip.iter().max_by_key(|(_, q)| q.len()).map(|(ip, _)| *ip);
            if let Some(busiest) = busiest {
                tracing::debug!(ip = %busiest, "peer listener: too many unauthenticated connections, closing the oldest");
                t.close_oldest(busiest);
            }
        }
        slot
    }

    /// `slot` authenticated (`AUTHENTICATED`) or is done (`OUT`): no longer counted.
    fn leave(&self, slot: &Slot, to: u8) {
        let mut t = self.lock();
        if slot.state() != PENDING {
            return;
        }
        slot.state.store(to, Ordering::Release);
        if let Some(queue) = t.by_ip.get_mut(&slot.ip) {
            if let Some(at) = queue.iter().position(|s| s.seq == slot.seq) {
                queue.remove(at);
                if queue.is_empty() {
                    t.by_ip.remove(&slot.ip);
                }
                t.total -= 1;
            }
        }
    }

    #[cfg(test)]
    fn counted(&self) -> usize {
        self.lock().total
    }
}

/// A connection, closed with an error once it is a stranger past its deadline or its cap.
pub struct Gated<Io> {
    io: Io,
    slot: Arc<Slot>,
    strangers: Strangers,
    deadline: Pin<Box<Sleep>>,
}

impl<Io> Gated<Io> {
    fn admitted(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if self.slot.state() == AUTHENTICATED {
            return Ok(());
        }
        self.slot.waker.register(cx.waker());
        if self.slot.state() == PENDING && self.deadline.as_mut().poll(cx).is_ready() {
            self.strangers.leave(&self.slot, OUT);
        }
        match self.slot.state() {
            OUT => Err(io::Error::new(io::ErrorKind::TimedOut, "unauthenticated peer connection closed")),
            _ => Ok(()),
        }
    }
}

impl<Io> Drop for Gated<Io> {
    fn drop(&mut self) {
        self.strangers.leave(&self.slot, OUT);
    }
}

impl<Io: AsyncRead + Unpin> AsyncRead for Gated<Io> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.admitted(cx)?;
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Gated<Io> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.admitted(cx)?;
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.admitted(cx)?;
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The peer listener's view of a connection: its address, and the hook that ends its count.
#[derive(Clone)]
pub struct PeerConn {
    pub remote: SocketAddr,
    verified: Option<OnVerified>,
}

impl std::fmt::Debug for PeerConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerConn").field("remote", &self.remote).finish_non_exhaustive()
    }
}

/// `inner` with every accepted connection counted as a stranger until it authenticates.
pub struct GatedListener<L> {
    inner: L,
    strangers: Strangers,
}

impl<L> GatedListener<L> {
    pub fn new(inner: L, strangers: Strangers) -> Self {
        GatedListener { inner, strangers }
    }
}

impl<L> Listener for GatedListener<L>
where
    L: Listener<Addr = SocketAddr>,
{
    type Io = Gated<L::Io>;
    type Addr = PeerConn;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (io, remote) = self.inner.accept().await;
        let slot = self.strangers.admit(remote.ip());
        let hook = {
            let (strangers, slot) = (self.strangers.clone(), slot.clone());
            OnVerified(Arc::new(move || strangers.leave(&slot, AUTHENTICATED)))
        };
        let deadline = Box::pin(tokio::time::sleep(self.strangers.auth_within));
        let gated = Gated { io, slot, strangers: self.strangers.clone(), deadline };
        (gated, PeerConn { remote, verified: Some(hook) })
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(PeerConn { remote: self.inner.local_addr()?, verified: None })
    }
}

impl<L> Connected<IncomingStream<'_, GatedListener<L>>> for PeerConn
where
    L: Listener<Addr = SocketAddr>,
{
    fn connect_info(stream: IncomingStream<'_, GatedListener<L>>) -> Self {
        stream.remote_addr().clone()
    }
}

/// Hands the connection's hook to the credential check (which calls it on success).
pub async fn hand_over(mut req: Request, next: Next) -> Response {
    let hook = req.extensions().get::<ConnectInfo<PeerConn>>().and_then(|c| c.0.verified.clone());
    if let Some(hook) = hook {
        req.extensions_mut().insert(hook);
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn a_crowded_source_loses_its_oldest_stranger() {
        let s = Strangers::new(2, 100, AUTH_WITHIN);
        let first = s.admit(ip(1));
        let second = s.admit(ip(1));
        let other = s.admit(ip(2));
        let third = s.admit(ip(1));
        assert_eq!(first.state(), OUT, "the oldest of the crowded source is closed");
        assert_eq!((second.state(), third.state(), other.state()), (PENDING, PENDING, PENDING));
        assert_eq!(s.counted(), 3);
    }

    #[test]
    fn the_total_cap_closes_the_busiest_sources_oldest() {
        let s = Strangers::new(10, 3, AUTH_WITHIN);
        let a1 = s.admit(ip(1));
        let a2 = s.admit(ip(1));
        let b = s.admit(ip(2));
        let c = s.admit(ip(3));
        assert_eq!(a1.state(), OUT);
        assert_eq!((a2.state(), b.state(), c.state()), (PENDING, PENDING, PENDING));
        assert_eq!(s.counted(), 3);
    }

    #[test]
    fn an_authenticated_connection_is_no_longer_counted_nor_closed() {
        let s = Strangers::new(1, 100, AUTH_WITHIN);
        let member = s.admit(ip(1));
        s.leave(&member, AUTHENTICATED);
        assert_eq!(s.counted(), 0);
        // Strangers from the same source come and go; the member's connection stays.
        for _ in 0..10 {
            s.admit(ip(1));
        }
        assert_eq!(member.state(), AUTHENTICATED);
        assert_eq!(s.counted(), 1);
        // Leaving twice, or after being closed, counts nothing twice.
        s.leave(&member, OUT);
        assert_eq!(s.counted(), 1);
    }

    fn gated(s: &Strangers, io: tokio::io::DuplexStream) -> Gated<tokio::io::DuplexStream> {
        let slot = s.admit(ip(1));
        Gated { io, slot, strangers: s.clone(), deadline: Box::pin(tokio::time::sleep(s.auth_within)) }
    }

    #[tokio::test]
    async fn a_stranger_is_cut_off_at_its_deadline_or_when_crowded_out() {
        let s = Strangers::new(1, 100, Duration::from_millis(50));
        let (near, mut far) = tokio::io::duplex(64);
        let mut conn = gated(&s, near);
        far.write_all(b"GET").await.unwrap();
        let mut buf = [0u8; 3];
        conn.read_exact(&mut buf).await.unwrap();
        // Nothing more arrives: the deadline ends the read with an error.
        let err = conn.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(s.counted(), 0);

        // A reader waiting on a stranger is woken when a newer one from its source closes it.
        let s = Strangers::new(1, 100, AUTH_WITHIN);
        let (near, _far) = tokio::io::duplex(64);
        let mut conn = gated(&s, near);
        let waiting = tokio::spawn(async move { conn.read(&mut [0u8; 1]).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let _newer = s.admit(ip(1));
        let got = tokio::time::timeout(Duration::from_secs(5), waiting).await.unwrap().unwrap();
        assert_eq!(got.unwrap_err().kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn an_authenticated_connection_outlives_the_deadline() {
        let s = Strangers::new(1, 100, Duration::from_millis(20));
        let (near, mut far) = tokio::io::duplex(64);
        let conn = gated(&s, near);
        s.leave(&conn.slot, AUTHENTICATED);
        let mut conn = conn;
        tokio::time::sleep(Duration::from_millis(60)).await;
        far.write_all(b"ok").await.unwrap();
        let mut buf = [0u8; 2];
        conn.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ok");
    }
}
