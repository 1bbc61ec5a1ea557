//! The real programs of TUN nodes: `spawn` (background servers) and `run` (the live run
//! ends when all of them have exited) commands, each `sh -c` inside the node's namespace,
//! in its own process group so that it and its children can be stopped together, with
//! stdout and stderr in `OUT/cmd/NODE-KIND-I.log`.
use rustix::process::{kill_process_group, Pid, Signal};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One command.
pub struct Proc {
    /// What `summary.json` says about it.
    pub info: ProcInfo,
    child: Option<Child>,
    started: Instant,
}

/// A command's record in `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct ProcInfo {
    /// Node.
    pub node: String,
    /// `run` or `spawn`.
    pub kind: &'static str,
    /// The command line.
    pub cmd: String,
    /// Exit code (`None`: still running at the end and stopped, or killed by a signal).
    pub exit_code: Option<i32>,
    /// Seconds from start to exit (or to the end of the run).
    pub seconds: f64,
    /// Stopped by the driver at the end of the run.
    pub stopped: bool,
    /// Log file, relative to the output directory.
    pub log: String,
}

impl Proc {
    /// Starts `cmd` in namespace `netns`.
    pub fn start(out: &Path, node: &str, netns: &str, kind: &'static str, i: usize, cmd: &str) -> Result<Proc, String> {
        let rel = PathBuf::from("cmd").join(format!("{node}-{kind}-{i}.log"));
        let path = out.join(&rel);
        std::fs::create_dir_all(path.parent().unwrap_or(out)).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let log = std::fs::File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        use std::os::unix::process::CommandExt;
        let child = Command::new("ip")
            .args(["netns", "exec", netns, "sh", "-c", cmd])
            .current_dir(out)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("node `{node}`: cannot start `{cmd}`: {e}"))?;
        Ok(Proc {
            info: ProcInfo { node: node.into(), kind, cmd: cmd.into(), exit_code: None, seconds: 0.0, stopped: false, log: rel.display().to_string() },
            child: Some(child),
            started: Instant::now(),
        })
    }

    /// True once the command has exited (reaps it).
    pub fn poll(&mut self) -> bool {
        let Some(c) = &mut self.child else { return true };
        match c.try_wait() {
            Ok(Some(st)) => {
                self.info.exit_code = st.code();
                self.info.seconds = self.started.elapsed().as_secs_f64();
                self.child = None;
                true
            }
            Ok(None) => false,
            Err(_) => {
                self.child = None;
                true
            }
        }
    }

    /// Stops the command and its children: SIGTERM to the group, SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        if self.poll() {
            return;
        }
        let Some(c) = &mut self.child else { return };
        let pgid = Pid::from_raw(c.id() as i32);
        self.info.stopped = true;
        if let Some(p) = pgid {
            let _ = kill_process_group(p, Signal::TERM);
        }
        let t = Instant::now();
        while t.elapsed() < grace {
            if let Ok(Some(_)) = c.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(p) = pgid {
            let _ = kill_process_group(p, Signal::KILL);
        }
        let st = c.wait().ok();
        self.info.exit_code = st.and_then(|s| s.code());
        self.info.seconds = self.started.elapsed().as_secs_f64();
        self.child = None;
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop(Duration::from_millis(500));
    }
}

/// Waits until every `(tcp?, port)` socket is open in namespace `netns` (`ss -Hln`: a TCP
/// listener, or a bound UDP socket), or `timeout`.
pub fn wait_ready(netns: &str, want: &[(bool, u16)], timeout: Duration) -> Result<(), String> {
    if want.is_empty() {
        return Ok(());
    }
    let t = Instant::now();
    loop {
        let o = Command::new("ip").args(["netns", "exec", netns, "ss", "-Hlntu"]).output().map_err(|e| format!("cannot run ss: {e}"))?;
        let text = String::from_utf8_lossy(&o.stdout);
        let open = |tcp: bool, port: u16| {
            text.lines().any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                // Netid State Recv-Q Send-Q Local:Port Peer:Port
                f.len() >= 5 && f[0] == if tcp { "tcp" } else { "udp" } && f[4].rsplit(':').next() == Some(&port.to_string())
            })
        };
        let missing: Vec<String> = want.iter().filter(|(tcp, p)| !open(*tcp, *p)).map(|(tcp, p)| format!("{}:{p}", if *tcp { "tcp" } else { "udp" })).collect();
        if missing.is_empty() {
            return Ok(());
        }
        if t.elapsed() > timeout {
            return Err(format!("{} not open after {:?} (ready = [...]); see the command logs under cmd/", missing.join(", "), timeout));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
