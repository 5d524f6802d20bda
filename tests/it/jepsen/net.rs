//! The campaign's network, built by the test and removed when it drops: a hub namespace with a
//! bridge, one namespace per member joined to the bridge by a veth pair, and one veth from the
//! test's own namespace to the bridge so the clients reach every member, partitioned or not.
//! Addresses are in 127.77.S.0/24 (`route_localnet` on every interface that carries them), so
//! nothing the campaign sends can leave the host. Faults are iptables rules and tbf queues in
//! the members' namespaces, matched on member addresses only: a client is never cut off.
//! (The kernel here has no `sch_netem`; delay comes from a rate-limited queue, see
//! docs/reliability.md.)

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static NETS: AtomicU32 = AtomicU32::new(0);

pub struct Net {
    tag: String,
    subnet: u8,
    members: usize,
}

/// Runs a command, panicking with its output when it fails.
fn run(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs a command, ignoring failure (teardown, rules that may not be there).
fn try_run(args: &[&str]) {
    let _ = Command::new(args[0]).args(&args[1..]).output();
}

impl Net {
    /// Why the campaign cannot run here, if it cannot (not root, no `ip` or `iptables`).
    pub fn unavailable() -> Option<String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Some("network namespaces need root".into());
        }
        for tool in ["ip", "iptables", "tc"] {
            if Command::new(tool).arg("-V").output().is_err() && Command::new(tool).arg("--version").output().is_err() {
                return Some(format!("{tool} is not installed"));
            }
        }
        None
    }

    /// A bridge and `members` member namespaces, each with its address.
    pub fn build(members: usize) -> Net {
        let k = NETS.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let tag = format!("j{:x}", (pid & 0xfff) * 16 + (k & 0xf));
        let subnet = (1 + (pid.wrapping_mul(31).wrapping_add(k * 7)) % 250) as u8;
        let net = Net { tag, subnet, members };
        let hub = net.hub();
        run(&["ip", "netns", "add", &hub]);
        run(&["ip", "-n", &hub, "link", "add", "br0", "type", "bridge"]);
        run(&["ip", "-n", &hub, "link", "set", "br0", "up"]);
        for i in 0..members {
            let ns = net.ns(i);
            let port = format!("{}p{i}", net.tag);
            run(&["ip", "netns", "add", &ns]);
            run(&["ip", "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", &ns]);
            net.attach(&port);
            run(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            run(&["ip", "netns", "exec", &ns, "sysctl", "-qw", "net.ipv4.conf.all.route_localnet=1"]);
            run(&["ip", "netns", "exec", &ns, "sysctl", "-qw", "net.ipv4.conf.eth0.route_localnet=1"]);
            run(&["ip", "-n", &ns, "addr", "add", &format!("{}/24", net.host(i)), "dev", "eth0"]);
            run(&["ip", "-n", &ns, "link", "set", "eth0", "up"]);
        }
        // The clients' way in, from the test's namespace.
        let client = format!("{}c", net.tag);
        run(&["ip", "link", "add", &client, "type", "veth", "peer", "name", &format!("{}h", net.tag)]);
        net.attach(&format!("{}h", net.tag));
        std::fs::write(format!("/proc/sys/net/ipv4/conf/{client}/route_localnet"), "1").expect("route_localnet");
        run(&["ip", "addr", "add", &format!("127.77.{}.254/24", net.subnet), "dev", &client]);
        run(&["ip", "link", "set", &client, "up"]);
        net
    }

    /// Moves a veth end from the test's namespace onto the hub's bridge.
    fn attach(&self, port: &str) {
        let hub = self.hub();
        run(&["ip", "link", "set", port, "netns", &hub]);
        run(&["ip", "-n", &hub, "link", "set", port, "master", "br0"]);
        run(&["ip", "-n", &hub, "link", "set", port, "up"]);
    }

    fn hub(&self) -> String {
        format!("idnode-{}-hub", self.tag)
    }

    /// Member `i`'s namespace.
    pub fn ns(&self, i: usize) -> String {
        format!("idnode-{}-m{i}", self.tag)
    }

    /// Member `i`'s address.
    pub fn host(&self, i: usize) -> String {
        format!("127.77.{}.{}", self.subnet, i + 1)
    }

    /// (address, namespace) of every member, as `Cluster::spawn_on` takes them.
    pub fn hosts(&self) -> Vec<(String, Option<String>)> {
        (0..self.members).map(|i| (self.host(i), Some(self.ns(i)))).collect()
    }

    fn ipt(&self, i: usize, rule: &[&str]) {
        let ns = self.ns(i);
        let mut args = vec!["ip", "netns", "exec", &ns, "iptables", "-w"];
        args.extend_from_slice(rule);
        run(&args);
    }

    /// Packets from member `from` to member `to` are lost (dropped as they arrive at `to`).
    pub fn cut(&self, from: usize, to: usize) {
        let src = self.host(from);
        self.ipt(to, &["-A", "INPUT", "-s", &src, "-j", "DROP"]);
    }

    /// No packet between members of different groups, either way.
    pub fn partition(&self, groups: &[Vec<usize>]) {
        for (g, group) in groups.iter().enumerate() {
            for (h, other) in groups.iter().enumerate() {
                if g != h {
                    for &a in group {
                        for &b in other {
                            self.cut(a, b);
                        }
                    }
                }
            }
        }
    }

    /// Member `i` loses `percent` of the packets other members send it.
    pub fn lossy(&self, i: usize, percent: u32) {
        let p = format!("{:.2}", f64::from(percent) / 100.0);
        let subnet = format!("127.77.{}.0/24", self.subnet);
        let client = format!("127.77.{}.254", self.subnet);
        self.ipt(i, &["-A", "INPUT", "-s", &client, "-j", "ACCEPT"]);
        self.ipt(
            i,
            &["-A", "INPUT", "-s", &subnet, "-m", "statistic", "--mode", "random", "--probability", &p, "-j", "DROP"],
        );
    }

    /// Member `i`'s link sends at most `kbit` kbit/s through a queue that holds `latency_ms`:
    /// a slow, congested link (packets wait, and drop when the queue is full).
    pub fn slow(&self, i: usize, kbit: u32, latency_ms: u32) {
        let ns = self.ns(i);
        run(&[
            "ip",
            "netns",
            "exec",
            &ns,
            "tc",
            "qdisc",
            "replace",
            "dev",
            "eth0",
            "root",
            "tbf",
            "rate",
            &format!("{kbit}kbit"),
            "burst",
            "16kb",
            "latency",
            &format!("{latency_ms}ms"),
        ]);
    }

    /// Every fault removed.
    pub fn heal(&self) {
        for i in 0..self.members {
            let ns = self.ns(i);
            try_run(&["ip", "netns", "exec", &ns, "iptables", "-w", "-F", "INPUT"]);
            try_run(&["ip", "netns", "exec", &ns, "tc", "qdisc", "del", "dev", "eth0", "root"]);
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        try_run(&["ip", "link", "del", &format!("{}c", self.tag)]);
        for i in 0..self.members {
            try_run(&["ip", "netns", "del", &self.ns(i)]);
        }
        try_run(&["ip", "netns", "del", &self.hub()]);
    }
}
