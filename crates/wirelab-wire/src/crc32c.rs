//! CRC32c (Castagnoli), the SCTP checksum (RFC 9260 Appendix A), table-driven slicing-by-8.
//!
//! Written out rather than taken from a crate so the wire crate has no dependencies; the
//! RFC 3720 test vectors below pin it.

const POLY: u32 = 0x82F6_3B78; // reflected 0x1EDC6F41

const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut s = 1;
        while s < 8 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            s += 1;
        }
        i += 1;
    }
    t
}

static TABLES: [[u32; 256]; 8] = make_tables();

/// Continues a CRC32c over `data` from state `crc` (start with `!0`, finish with `!`).
pub fn update(mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let lo = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) ^ crc;
        let hi = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        crc = TABLES[7][(lo & 0xff) as usize]
            ^ TABLES[6][((lo >> 8) & 0xff) as usize]
            ^ TABLES[5][((lo >> 16) & 0xff) as usize]
            ^ TABLES[4][(lo >> 24) as usize]
            ^ TABLES[3][(hi & 0xff) as usize]
            ^ TABLES[2][((hi >> 8) & 0xff) as usize]
            ^ TABLES[1][((hi >> 16) & 0xff) as usize]
            ^ TABLES[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ TABLES[0][((crc ^ b as u32) & 0xff) as usize];
    }
    crc
}

/// CRC32c of `data`.
pub fn checksum(data: &[u8]) -> u32 {
    !update(!0, data)
}

/// The SCTP checksum of a whole SCTP packet whose checksum field (bytes 8..12) is zero.
/// SCTP stores it little-endian on the wire (RFC 9260 Appendix A).
pub fn sctp_checksum(packet: &[u8]) -> u32 {
    checksum(packet)
}

/// Verifies an SCTP packet's checksum in place (treating bytes 8..12 as zero).
pub fn sctp_verify(packet: &[u8]) -> bool {
    if packet.len() < 12 {
        return false;
    }
    let stored = u32::from_le_bytes([packet[8], packet[9], packet[10], packet[11]]);
    let mut crc = update(!0, &packet[..8]);
    crc = update(crc, &[0, 0, 0, 0]);
    crc = update(crc, &packet[12..]);
    !crc == stored
}

/// Computes and stores the SCTP checksum (little-endian, bytes 8..12).
pub fn sctp_fill(packet: &mut [u8]) {
    if packet.len() < 12 {
        return;
    }
    packet[8..12].fill(0);
    let c = checksum(packet);
    packet[8..12].copy_from_slice(&c.to_le_bytes());
}

#[cfg(test)]
mod test {
    use super::*;
    #[test]
    fn rfc3720_vectors() {
        assert_eq!(checksum(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(checksum(&[0xffu8; 32]), 0x62A8_AB43);
        let inc: Vec<u8> = (0..32).collect();
        assert_eq!(checksum(&inc), 0x46DD_794E);
        let dec: Vec<u8> = (0..32).rev().collect();
        assert_eq!(checksum(&dec), 0x113F_DB5C);
        assert_eq!(checksum(b"123456789"), 0xE306_9283);
    }
    #[test]
    fn fill_then_verify() {
        let mut p: Vec<u8> = (0..64u8).collect();
        sctp_fill(&mut p);
        assert!(sctp_verify(&p));
        p[20] ^= 1;
        assert!(!sctp_verify(&p));
    }
}
