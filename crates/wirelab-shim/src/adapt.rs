//! Shim capability discovery on the wire: an Adaptation Layer Indication parameter
//! (RFC 5061 §4.2.7, type 0xC006) appended to the INIT and INIT-ACK a shim sends.
//!
//! Why: the half-close emulation writes an end-of-stream marker on a reserved control
//! stream, which a native SCTP application would read as data. A shim therefore uses the
//! control stream only when the peer advertised itself as a shim. The parameter's two top
//! bits are `11` (skip and report), so a stack that does not know it answers with an
//! Unrecognized Parameter and carries on; Linux understands 0xC006 and raises
//! `SCTP_ADAPTATION_INDICATION` only for applications that subscribed to it.
//!
//! Incoming INIT/INIT-ACKs have the parameter removed before they reach the shim's own
//! SCTP engine, which does not implement RFC 5061 (so it neither reports nor stores it).
use wirelab_wire::crc32c;

/// Parameter type of the Adaptation Layer Indication (RFC 5061 §4.2.7).
pub const PARAM_ADAPTATION_LAYER: u16 = 0xC006;
/// The adaptation code point the shim advertises: ASCII "TCPS". Any value works as long as
/// both ends agree; IANA never assigned one for TCP-to-SCTP shims.
pub const SHIM_ADAPTATION_CODE: u32 = u32::from_be_bytes(*b"TCPS");

const COMMON: usize = 12;
const INIT: u8 = 1;
const INIT_ACK: u8 = 2;
/// INIT/INIT-ACK chunk header (4) + fixed fields (16).
const INIT_FIXED: usize = 20;

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// If `pkt` is an SCTP packet holding a single INIT or INIT-ACK chunk, appends the shim's
/// Adaptation Layer Indication and refreshes the CRC32c. `pkt` is the packet from the
/// common header on; it grows by 8 bytes. Returns true if the packet was changed.
pub fn append_indication(pkt: &mut Vec<u8>, from: usize) -> bool {
    let p = &pkt[from..];
    if p.len() < COMMON + INIT_FIXED || !matches!(p[COMMON], INIT | INIT_ACK) {
        return false;
    }
    let clen = u16::from_be_bytes([p[COMMON + 2], p[COMMON + 3]]) as usize;
    // INIT and INIT-ACK are never bundled (RFC 9260 §6.10); leave anything odd alone.
    if clen < INIT_FIXED || COMMON + pad4(clen) != p.len() || pad4(clen) + 8 > u16::MAX as usize {
        return false;
    }
    let new_len = (pad4(clen) + 8) as u16;
    pkt.extend_from_slice(&PARAM_ADAPTATION_LAYER.to_be_bytes());
    pkt.extend_from_slice(&8u16.to_be_bytes());
    pkt.extend_from_slice(&SHIM_ADAPTATION_CODE.to_be_bytes());
    pkt[from + COMMON + 2..from + COMMON + 4].copy_from_slice(&new_len.to_be_bytes());
    crc32c::sctp_fill(&mut pkt[from..]);
    true
}

/// What [`strip_indication`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Not an INIT/INIT-ACK, or no shim indication in it.
    No,
    /// Chunk type (INIT = 1, INIT-ACK = 2) and the packet without the parameter (CRC32c
    /// recomputed).
    Yes(u8, Vec<u8>),
}

/// Looks for the shim's indication among the top-level parameters of an INIT/INIT-ACK
/// (packets failing the checksum are left to the engine, which drops them).
pub fn strip_indication(pkt: &[u8]) -> Found {
    if pkt.len() < COMMON + INIT_FIXED || !matches!(pkt[COMMON], INIT | INIT_ACK) || !crc32c::sctp_verify(pkt) {
        return Found::No;
    }
    let clen = u16::from_be_bytes([pkt[COMMON + 2], pkt[COMMON + 3]]) as usize;
    let end = COMMON + clen;
    if clen < INIT_FIXED || end > pkt.len() {
        return Found::No;
    }
    let mut at = COMMON + INIT_FIXED;
    let mut prev_end = at; // unpadded end of the previous parameter
    while at + 4 <= end {
        let t = u16::from_be_bytes([pkt[at], pkt[at + 1]]);
        let l = u16::from_be_bytes([pkt[at + 2], pkt[at + 3]]) as usize;
        if l < 4 || at + l > end {
            return Found::No;
        }
        if t == PARAM_ADAPTATION_LAYER && l == 8 && pkt[at + 4..at + 8] == SHIM_ADAPTATION_CODE.to_be_bytes() {
            let last = pad4(at + l) >= end;
            let mut out = Vec::with_capacity(pkt.len());
            out.extend_from_slice(&pkt[..at]);
            let new_clen = if last {
                prev_end - COMMON
            } else {
                out.extend_from_slice(&pkt[at + 8..]);
                clen - 8
            };
            out.resize(COMMON + pad4(new_clen), 0);
            out[COMMON + 2..COMMON + 4].copy_from_slice(&(new_clen as u16).to_be_bytes());
            crc32c::sctp_fill(&mut out);
            return Found::Yes(pkt[COMMON], out);
        }
        prev_end = at + l;
        at = pad4(at + l);
    }
    Found::No
}

#[cfg(test)]
mod test {
    use super::*;

    fn init_pkt(params: &[u8], unpadded_last: usize) -> Vec<u8> {
        // common header + INIT with the given raw params; chunk length excludes the last
        // parameter's padding by `unpadded_last` bytes
        let mut p = vec![0u8; COMMON];
        p[0..2].copy_from_slice(&5000u16.to_be_bytes());
        let clen = INIT_FIXED + params.len() - unpadded_last;
        p.extend_from_slice(&[INIT, 0]);
        p.extend_from_slice(&(clen as u16).to_be_bytes());
        p.extend_from_slice(&[1, 2, 3, 4, 0, 1, 0, 0, 0, 10, 0, 10, 9, 9, 9, 9]);
        p.extend_from_slice(params);
        crc32c::sctp_fill(&mut p);
        p
    }

    #[test]
    fn append_then_strip_restores_packet() {
        // one IPv4 address parameter, and a 5-byte odd parameter (3 bytes padding)
        let params = [0, 5, 0, 8, 10, 0, 0, 1, 0x80, 0x99, 0, 5, 7, 0, 0, 0];
        let orig = init_pkt(&params, 3);
        let mut buf = vec![0xEE; 20];
        buf.extend_from_slice(&orig);
        assert!(append_indication(&mut buf, 20));
        assert!(crc32c::sctp_verify(&buf[20..]));
        assert_eq!(buf.len(), 20 + orig.len() + 8);
        match strip_indication(&buf[20..]) {
            Found::Yes(k, back) => {
                assert_eq!(k, INIT);
                assert_eq!(back, orig);
            }
            Found::No => panic!("indication not found"),
        }
        assert_eq!(strip_indication(&orig), Found::No);
    }

    #[test]
    fn ignores_other_chunks_and_corrupt_packets() {
        let mut data = init_pkt(&[], 0);
        data[COMMON] = 0; // DATA
        crc32c::sctp_fill(&mut data);
        let mut b = data.clone();
        assert!(!append_indication(&mut b, 0));
        assert_eq!(b, data);
        let mut p = init_pkt(&[], 0);
        assert!(append_indication(&mut p, 0));
        let n = p.len();
        p[n - 1] ^= 1; // corrupt: checksum fails
        assert_eq!(strip_indication(&p), Found::No);
        for cut in 0..p.len() {
            let _ = strip_indication(&p[..cut]);
        }
    }
}
