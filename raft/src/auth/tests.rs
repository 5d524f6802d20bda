use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;

use axum::body::{Body, Bytes};
use axum::extract::Request;

use super::*;

const NOW: i64 = 1_800_000_000;
const ME: u64 = 2;

fn gate(secret: Option<&str>) -> Gate {
    Gate::new(Arc::new(Credential::from_secret(secret)), ME)
}

fn cred(secret: &str) -> Credential {
    Credential::from_secret(Some(secret))
}

/// What the middleware does, with the body in hand and its length as `Content-Length`.
fn verify(g: &Gate, method: &str, path: &str, body: &[u8], header: &str, now: i64) -> Result<(), Refusal> {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header(HEADER, header)
        .header("content-length", body.len())
        .body(Body::from(body.to_vec()))
        .unwrap();
    futures::executor::block_on(g.check(req, now)).map(|_| ())
}

/// A body that fails the test if anything reads it.
fn untouchable() -> Body {
    Body::from_stream(futures::stream::poll_fn(|_| -> Poll<Option<Result<Bytes, std::io::Error>>> {
        panic!("the body was read before the request was authenticated")
    }))
}

/// A body of endless 1 KiB chunks that counts the bytes handed out.
fn endless(served: Arc<AtomicUsize>) -> Body {
    Body::from_stream(futures::stream::poll_fn(move |_| {
        served.fetch_add(1024, Ordering::SeqCst);
        Poll::Ready(Some(Ok::<_, std::io::Error>(Bytes::from(vec![7u8; 1024]))))
    }))
}

#[test]
fn signed_request_passes_once() {
    let a = cred("s3cret");
    let b = gate(Some("s3cret"));
    let h = a.sign("POST", "/raft/vote", b"body", ME, NOW);
    assert!(h.starts_with("idnode-hmac-v2 ") && !h.contains("s3cret"));
    assert_eq!(verify(&b, "POST", "/raft/vote", b"body", &h, NOW + 3), Ok(()));
    assert_eq!(verify(&b, "POST", "/raft/vote", b"body", &h, NOW + 4), Err(Refusal::Replayed));
    // A fresh signature of the same request is a new request.
    let h2 = a.sign("POST", "/raft/vote", b"body", ME, NOW);
    assert_eq!(verify(&b, "POST", "/raft/vote", b"body", &h2, NOW), Ok(()));
}

#[test]
fn a_request_for_another_member_is_refused() {
    let a = cred("s3cret");
    let b = gate(Some("s3cret"));
    let for_3 = a.sign("POST", "/raft/append", b"entries", 3, NOW);
    assert_eq!(
        verify(&b, "POST", "/raft/append", b"entries", &for_3, NOW),
        Err(Refusal::WrongMember { to: 3, me: ME })
    );
    // Rewriting the destination in the header breaks the MAC.
    let parts: Vec<&str> = for_3.split(' ').collect();
    let moved = format!("{} {} {} {ME} {}", parts[0], parts[1], parts[2], parts[4..].join(" "));
    assert_eq!(verify(&b, "POST", "/raft/append", b"entries", &moved, NOW), Err(Refusal::BadMac));
    // The member it was meant for takes it.
    let c = Gate::new(Arc::new(cred("s3cret")), 3);
    assert_eq!(verify(&c, "POST", "/raft/append", b"entries", &for_3, NOW), Ok(()));
}

#[test]
fn old_schemes_are_refused_with_their_cause() {
    // What the release before last sent: hex SHA-256 of a label and the secret.
    let mut h = Sha256::new();
    h.update(b"idnode-raft-peer-credential-v1\0");
    h.update(b"s3cret");
    let bearer = hex::encode(h.finalize());
    let b = gate(Some("s3cret"));
    assert_eq!(verify(&b, "POST", "/raft/vote", b"", &bearer, NOW), Err(Refusal::Malformed));
    // The last release's header: scheme, timestamp, nonce, MAC.
    let v1 = format!("idnode-hmac-v1 {NOW} {} {}", "00".repeat(16), "11".repeat(32));
    assert_eq!(verify(&b, "POST", "/raft/vote", b"", &v1, NOW), Err(Refusal::OldScheme));
    let req = Request::post("/raft/vote").body(Body::empty()).unwrap();
    assert_eq!(futures::executor::block_on(b.check(req, NOW)).map(|_| ()), Err(Refusal::Missing));
}

#[test]
fn tampered_requests_are_refused() {
    let a = cred("s3cret");
    let b = gate(Some("s3cret"));
    let h = a.sign("POST", "/raft/append", b"entries", ME, NOW);
    assert_eq!(verify(&b, "POST", "/raft/vote", b"entries", &h, NOW), Err(Refusal::BadMac));
    assert_eq!(verify(&b, "GET", "/raft/append", b"entries", &h, NOW), Err(Refusal::BadMac));
    // A moved timestamp breaks the MAC too.
    let parts: Vec<&str> = h.split(' ').collect();
    let moved = format!("{} {} {}", parts[0], NOW + 1, parts[2..].join(" "));
    assert_eq!(verify(&b, "POST", "/raft/append", b"entries", &moved, NOW), Err(Refusal::BadMac));
    // Another cluster's secret.
    let other = cred("another").sign("POST", "/raft/append", b"entries", ME, NOW);
    assert_eq!(verify(&b, "POST", "/raft/append", b"entries", &other, NOW), Err(Refusal::BadMac));
    // The untampered request still passes: refusals before the MAC remembered nothing.
    assert_eq!(verify(&b, "POST", "/raft/append", b"entries", &h, NOW), Ok(()));
}

#[test]
fn a_tampered_body_is_refused_after_streaming_and_burns_the_nonce() {
    let a = cred("s3cret");
    let b = gate(Some("s3cret"));
    let h = a.sign("POST", "/raft/append", b"entries", ME, NOW);
    // Same length, other bytes: only the digest, computed as the body streams, tells.
    assert_eq!(verify(&b, "POST", "/raft/append", b"entriez", &h, NOW), Err(Refusal::BodyMismatch));
    // The header passed and its nonce is spent: the genuine body cannot follow with it.
    assert_eq!(verify(&b, "POST", "/raft/append", b"entries", &h, NOW), Err(Refusal::Replayed));
    // A shorter body than declared (Content-Length agreeing with it) is refused up front.
    let h = a.sign("POST", "/raft/append", b"entries", ME, NOW);
    assert_eq!(verify(&b, "POST", "/raft/append", b"entrie", &h, NOW), Err(Refusal::BodyMismatch));
}

#[test]
fn the_mac_is_checked_before_the_body_is_touched() {
    let b = gate(Some("s3cret"));
    let forged = cred("guess").sign("POST", "/raft/append", &[0u8; 1 << 20], ME, NOW);
    let req = Request::post("/raft/append").header(HEADER, forged).body(untouchable()).unwrap();
    assert_eq!(futures::executor::block_on(b.check(req, NOW)).map(|_| ()), Err(Refusal::BadMac));
    // Nor for a stale, misdirected or old-scheme header.
    for h in [
        cred("s3cret").sign("POST", "/raft/append", b"", ME, NOW - WINDOW_S - 1),
        cred("s3cret").sign("POST", "/raft/append", b"", ME + 1, NOW),
        format!("idnode-hmac-v1 {NOW} {} {}", "00".repeat(16), "11".repeat(32)),
    ] {
        let req = Request::post("/raft/append").header(HEADER, h).body(untouchable()).unwrap();
        assert!(futures::executor::block_on(b.check(req, NOW)).is_err());
    }
    assert_eq!(b.remembered(), 0);
}

#[test]
fn a_body_longer_than_declared_is_refused_without_reading_past_the_bound() {
    let a = cred("s3cret");
    let b = gate(Some("s3cret"));
    let body = vec![7u8; 4096];
    // Content-Length above the declared length: refused before the body is polled.
    let h = a.sign("POST", "/raft/append", &body, ME, NOW);
    let req =
        Request::post("/raft/append").header(HEADER, h).header("content-length", 1 << 30).body(untouchable()).unwrap();
    assert_eq!(futures::executor::block_on(b.check(req, NOW)).map(|_| ()), Err(Refusal::TooLarge));
    let h = a.sign("POST", "/raft/append", &body, ME, NOW);
    let req =
        Request::post("/raft/append").header(HEADER, h).header("content-length", 4097).body(untouchable()).unwrap();
    assert_eq!(futures::executor::block_on(b.check(req, NOW)).map(|_| ()), Err(Refusal::BodyMismatch));
    // No Content-Length (chunked) and an endless body: reading stops one chunk past the bound.
    let served = Arc::new(AtomicUsize::new(0));
    let h = a.sign("POST", "/raft/append", &body, ME, NOW);
    let req = Request::post("/raft/append").header(HEADER, h).body(endless(served.clone())).unwrap();
    assert_eq!(futures::executor::block_on(b.check(req, NOW)).map(|_| ()), Err(Refusal::BodyMismatch));
    assert!(served.load(Ordering::SeqCst) <= 4096 + 1024, "read {} bytes", served.load(Ordering::SeqCst));
    // A declared length above the largest body is refused on the header's form alone.
    let signed = Signed::parse(Some(a.sign("POST", "/x", b"", ME, NOW).as_bytes())).unwrap();
    let huge = Signed { len: MAX_BODY as u64 + 1, ..signed };
    assert_eq!(Signed::parse(Some(huge.header().as_bytes())), Err(Refusal::TooLarge));
}

#[test]
fn the_streamed_body_is_handed_on_whole() {
    let a = cred("s3cret");
    let b = gate(Some("s3cret"));
    let body: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
    let h = a.sign("POST", "/raft/append", &body, ME, NOW);
    let chunks: Vec<Result<Bytes, std::io::Error>> = body.chunks(777).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
    let req =
        Request::post("/raft/append").header(HEADER, h).body(Body::from_stream(futures::stream::iter(chunks))).unwrap();
    let passed = futures::executor::block_on(b.check(req, NOW)).unwrap();
    let got = futures::executor::block_on(axum::body::to_bytes(passed.into_body(), usize::MAX)).unwrap();
    assert_eq!(&got[..], &body[..]);
}

#[test]
fn the_verified_hook_runs_only_for_authenticated_requests() {
    let calls = Arc::new(AtomicUsize::new(0));
    let hook = {
        let calls = calls.clone();
        OnVerified(Arc::new(move || {
            calls.fetch_add(1, Ordering::SeqCst);
        }))
    };
    let b = gate(Some("s3cret"));
    for (secret, want) in [("guess", 0), ("s3cret", 1)] {
        let h = cred(secret).sign("POST", "/raft/vote", b"", ME, NOW);
        let mut req = Request::post("/raft/vote").header(HEADER, h).body(Body::empty()).unwrap();
        req.extensions_mut().insert(hook.clone());
        let _ = futures::executor::block_on(b.check(req, NOW));
        assert_eq!(calls.load(Ordering::SeqCst), want);
    }
}

#[test]
fn stale_and_future_timestamps_are_refused() {
    let a = cred("s3cret");
    let b = gate(Some("s3cret"));
    let old = a.sign("POST", "/raft/vote", b"", ME, NOW - WINDOW_S - 1);
    assert_eq!(verify(&b, "POST", "/raft/vote", b"", &old, NOW), Err(Refusal::Stale { off_by: -31 }));
    let ahead = a.sign("POST", "/raft/vote", b"", ME, NOW + WINDOW_S + 1);
    assert!(matches!(verify(&b, "POST", "/raft/vote", b"", &ahead, NOW), Err(Refusal::Stale { .. })));
    let edge = a.sign("POST", "/raft/vote", b"", ME, NOW - WINDOW_S);
    assert_eq!(verify(&b, "POST", "/raft/vote", b"", &edge, NOW), Ok(()));
}

#[test]
fn nonces_are_forgotten_only_after_the_window() {
    let a = cred("s3cret");
    let b = gate(Some("s3cret"));
    let h = a.sign("POST", "/raft/vote", b"", ME, NOW);
    assert_eq!(verify(&b, "POST", "/raft/vote", b"", &h, NOW), Ok(()));
    // Still inside the window: remembered.
    assert_eq!(verify(&b, "POST", "/raft/vote", b"", &h, NOW + WINDOW_S), Err(Refusal::Replayed));
    // Past it: the timestamp is refused, and the next accepted request forgets the nonce.
    let later = NOW + WINDOW_S + 1;
    assert!(matches!(verify(&b, "POST", "/raft/vote", b"", &h, later), Err(Refusal::Stale { .. })));
    let fresh = a.sign("POST", "/raft/vote", b"", ME, later);
    assert_eq!(verify(&b, "POST", "/raft/vote", b"", &fresh, later), Ok(()));
    assert_eq!(b.remembered(), 1);
}

#[test]
fn no_secret_means_nobody_gets_in() {
    let a = Credential::from_secret(None);
    let b = gate(None);
    let h = a.sign("POST", "/raft/vote", b"", ME, NOW);
    assert_eq!(verify(&b, "POST", "/raft/vote", b"", &h, NOW), Err(Refusal::BadMac));
    let h = sign_request("", ME, "POST", "/raft/vote", b"").1;
    assert_eq!(verify(&b, "POST", "/raft/vote", b"", &h, now_s()), Err(Refusal::BadMac));
}
