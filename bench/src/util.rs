//! Small helpers: randomness, free loopback ports, progress lines on stderr.

use std::fs::File;
use std::io::Read;
use std::net::TcpListener;

use anyhow::{Context, Result};

pub fn random_bytes(n: usize) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; n];
    File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)).context("read /dev/urandom")?;
    Ok(buf)
}

pub fn random_hex(n: usize) -> Result<String> {
    Ok(random_bytes(n)?.iter().map(|b| format!("{b:02x}")).collect())
}

pub fn free_ports(n: usize) -> Result<Vec<u16>> {
    let ls = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .context("bind 127.0.0.1:0")?;
    ls.iter().map(|l| Ok(l.local_addr()?.port())).collect::<std::io::Result<Vec<_>>>().context("local_addr")
}

pub fn progress(msg: impl AsRef<str>) {
    eprintln!("[idnode-bench] {}", msg.as_ref());
}
