//! Integration tests of idnode-raft: openraft's storage conformance suite and in-process
//! three-node clusters talking over real loopback HTTP.

mod app;
mod batch;
mod cluster;
mod conformance;
mod harness;
mod lease;
mod snapshot_stream;
mod upgrade;
mod watermark;
