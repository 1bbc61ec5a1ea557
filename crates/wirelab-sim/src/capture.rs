//! pcap/pcapng capture sinks that write what `tcpdump -i IFACE` would see.
use crate::record::{CaptureDir, CaptureSink};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use wirelab_core::Instant;
use wirelab_wire::ethernet::MacAddr;
use wirelab_wire::pcap::{PcapWriter, PcapngWriter};

/// Capture file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureFormat {
    /// Classic pcap, nanosecond timestamps, Ethernet link type.
    Pcap,
    /// pcapng with one interface block.
    Pcapng,
}

enum W {
    Pcap(PcapWriter<BufWriter<File>>),
    Pcapng(PcapngWriter<BufWriter<File>>),
}

/// One interface's capture file. Frames get synthetic Ethernet headers with the
/// interface's and its peer's deterministic MACs.
pub struct FileCapture {
    w: W,
    own: MacAddr,
    peer: MacAddr,
    err: Option<std::io::Error>,
}

impl FileCapture {
    /// Creates `path`.
    pub fn create(path: &Path, format: CaptureFormat, own: MacAddr, peer: MacAddr, name: &str, description: &str) -> std::io::Result<Self> {
        let f = BufWriter::with_capacity(1 << 16, File::create(path)?);
        let w = match format {
            CaptureFormat::Pcap => W::Pcap(PcapWriter::new(f)?),
            CaptureFormat::Pcapng => {
                let mut w = PcapngWriter::new(f)?;
                w.add_interface(wirelab_wire::pcap::linktype::ETHERNET, name, description)?;
                W::Pcapng(w)
            }
        };
        Ok(FileCapture { w, own, peer, err: None })
    }
}

impl CaptureSink for FileCapture {
    fn record(&mut self, t: Instant, _iface: u32, dir: CaptureDir, ip: &[u8]) {
        if self.err.is_some() {
            return;
        }
        let (src, dst) = match dir {
            CaptureDir::Out => (self.own, self.peer),
            CaptureDir::In => (self.peer, self.own),
        };
        let r = match &mut self.w {
            W::Pcap(w) => w.write_ipv4_as_ethernet(t, src, dst, ip),
            W::Pcapng(w) => w.write_ipv4_as_ethernet(0, t, src, dst, ip),
        };
        if let Err(e) = r {
            self.err = Some(e);
        }
    }
    fn finish(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        match &mut self.w {
            W::Pcap(w) => w.flush(),
            W::Pcapng(w) => w.flush(),
        }
    }
}
