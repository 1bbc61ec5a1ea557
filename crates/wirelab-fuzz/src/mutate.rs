//! Input mutation: byte-level (as AFL's havoc stage) and token-level (for the text
//! parsers). Every choice comes from a [`Rng`], so iteration `i` of a campaign is the same
//! input on every machine and can be replayed from its number alone.
use wirelab_core::Rng;

/// Values that sit on the edges parsers get wrong: zero, sign bits, all ones, powers of two
/// around the u8/u16/u32 limits (AFL's "interesting values").
const INTERESTING_8: &[u8] = &[0, 1, 0x7f, 0x80, 0xff, 16, 32, 64, 100, 2, 4, 3, 5, 6, 7, 8, 12, 20, 0x96, 0x45];
const INTERESTING_16: &[u16] = &[0, 1, 0x7fff, 0x8000, 0xffff, 0x100, 0x200, 0x3ff, 0x400, 1500, 1514, 576, 20, 40, 60, 65535 - 20];
const INTERESTING_32: &[u32] = &[0, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0x1_0000, 0xffff, 0x1000_0000, 12, 16, 28, 262_144, 0x0a0d_0d0a, 0x1a2b_3c4d, 0xa1b2_c3d4];

/// Byte-level havoc: `1..=max_ops` stacked mutations of `v`, sometimes splicing in bytes
/// from `other` (another corpus entry). Keeps `v` within `max_len`.
pub fn havoc(rng: &mut Rng, v: &mut Vec<u8>, other: &[u8], max_ops: u64, max_len: usize) {
    let ops = 1 + rng.below(max_ops.max(1));
    for _ in 0..ops {
        let len = v.len();
        let at = |rng: &mut Rng| if len == 0 { 0 } else { rng.below(len as u64) as usize };
        match rng.below(14) {
            0 if len > 0 => {
                let i = at(rng);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = at(rng);
                v[i] = rng.next_u32() as u8;
            }
            2 if len > 0 => {
                let i = at(rng);
                v[i] = INTERESTING_8[rng.below(INTERESTING_8.len() as u64) as usize];
            }
            3 if len > 1 => {
                let i = rng.below(len as u64 - 1) as usize;
                let x = INTERESTING_16[rng.below(INTERESTING_16.len() as u64) as usize];
                let b = if rng.chance(0.5) { x.to_be_bytes() } else { x.to_le_bytes() };
                v[i..i + 2].copy_from_slice(&b);
            }
            4 if len > 3 => {
                let i = rng.below(len as u64 - 3) as usize;
                let x = INTERESTING_32[rng.below(INTERESTING_32.len() as u64) as usize];
                let b = if rng.chance(0.5) { x.to_be_bytes() } else { x.to_le_bytes() };
                v[i..i + 4].copy_from_slice(&b);
            }
            5 if len > 1 => {
                // small arithmetic on a byte or a big-endian u16 (lengths, counts)
                let i = rng.below(len as u64 - 1) as usize;
                let d = rng.below(35) as i32 - 17;
                let x = u16::from_be_bytes([v[i], v[i + 1]]) as i32 + d;
                v[i..i + 2].copy_from_slice(&(x as u16).to_be_bytes());
            }
            6 if len > 0 => {
                // delete a range
                let i = at(rng);
                let n = 1 + rng.below((len - i).min(64) as u64) as usize;
                v.drain(i..i + n);
            }
            7 if len > 0 => {
                // duplicate a range (repeated options, chunks, blocks)
                let i = at(rng);
                let n = 1 + rng.below((len - i).min(64) as u64) as usize;
                let piece = v[i..i + n].to_vec();
                let j = rng.below(len as u64 + 1) as usize;
                v.splice(j..j, piece);
            }
            8 => {
                // insert random or constant bytes
                let j = rng.below(len as u64 + 1) as usize;
                let n = 1 + rng.below(16) as usize;
                let fill = rng.next_u32() as u8;
                let rand = rng.chance(0.5);
                let piece: Vec<u8> = (0..n).map(|_| if rand { rng.next_u32() as u8 } else { fill }).collect();
                v.splice(j..j, piece);
            }
            9 if len > 0 => v.truncate(at(rng)),
            10 if !other.is_empty() => {
                // splice: our head, their tail
                let i = rng.below(len as u64 + 1) as usize;
                let j = rng.below(other.len() as u64) as usize;
                v.truncate(i);
                v.extend_from_slice(&other[j..]);
            }
            11 if len > 1 => {
                // copy a range over another place in the same input
                let i = at(rng);
                let j = at(rng);
                let n = 1 + rng.below((len - i.max(j)).min(32) as u64) as usize;
                let piece = v[i..i + n].to_vec();
                v[j..j + n].copy_from_slice(&piece);
            }
            12 if len > 0 => {
                let i = at(rng);
                v[i] = v[i].wrapping_add(rng.below(3) as u8).wrapping_sub(1);
            }
            _ => {
                let j = rng.below(len as u64 + 1) as usize;
                v.insert(j, rng.next_u32() as u8);
            }
        }
        if v.len() > max_len {
            v.truncate(max_len);
        }
    }
}

/// Token-level mutation of text: splits into tokens (runs of word characters, runs of
/// other characters) and replaces, duplicates, drops or inserts tokens, drawing new ones
/// from `dict` or from the text itself. Whole lines are duplicated or dropped too.
pub fn text(rng: &mut Rng, s: &str, dict: &[&str], max_ops: u64) -> String {
    let mut toks = tokens(s);
    let ops = 1 + rng.below(max_ops.max(1));
    for _ in 0..ops {
        let n = toks.len();
        let pick_dict = |rng: &mut Rng| dict[rng.below(dict.len() as u64) as usize].to_string();
        match rng.below(8) {
            0 | 1 if n > 0 && !dict.is_empty() => {
                let i = rng.below(n as u64) as usize;
                toks[i] = pick_dict(rng);
            }
            2 if n > 0 => {
                let i = rng.below(n as u64) as usize;
                let j = rng.below(n as u64) as usize;
                toks[i] = toks[j].clone();
            }
            3 if n > 0 => {
                toks.remove(rng.below(n as u64) as usize);
            }
            4 if !dict.is_empty() => {
                let i = rng.below(n as u64 + 1) as usize;
                let t = pick_dict(rng);
                toks.insert(i, t);
                if rng.chance(0.5) {
                    toks.insert(i, " ".into());
                }
            }
            5 => {
                // duplicate or drop a whole line
                let text: String = toks.concat();
                let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
                if lines.is_empty() {
                    continue;
                }
                let i = rng.below(lines.len() as u64) as usize;
                if rng.chance(0.5) {
                    lines.insert(i, lines[i]);
                } else {
                    lines.remove(i);
                }
                toks = tokens(&lines.concat());
            }
            6 if n > 0 => {
                // a byte-level change inside one token (typos, stray quotes)
                let i = rng.below(n as u64) as usize;
                let mut b = toks[i].clone().into_bytes();
                havoc(rng, &mut b, &[], 2, 64);
                toks[i] = String::from_utf8_lossy(&b).into_owned();
            }
            _ if n > 0 => {
                let i = rng.below(n as u64) as usize;
                let t = toks[i].clone();
                toks.insert(i, t);
            }
            _ => {}
        }
    }
    toks.concat()
}

/// Splits text into alternating runs of "word" characters (letters, digits, `._-+%:/`)
/// and everything else, so that `rate 10mbit` or `a = "1.5e3s"` keep their values whole.
pub fn tokens(s: &str) -> Vec<String> {
    let word = |c: char| c.is_alphanumeric() || "._-+%:/".contains(c);
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut cur_word = None;
    for c in s.chars() {
        let w = word(c);
        if cur_word.is_some_and(|x| x != w) {
            out.push(std::mem::take(&mut cur));
        }
        cur_word = Some(w);
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn tokens_round_trip_and_keep_values_whole() {
        let s = "rate 10mbit delay 1.5e3ms\nloss 1%";
        let t = tokens(s);
        assert_eq!(t.concat(), s);
        assert!(t.contains(&"10mbit".to_string()) && t.contains(&"1.5e3ms".to_string()));
    }

    #[test]
    fn havoc_is_deterministic_and_bounded() {
        let run = || {
            let mut r = Rng::stream(1, "t");
            let mut v = b"0123456789abcdef".to_vec();
            for _ in 0..1000 {
                havoc(&mut r, &mut v, b"other", 8, 100);
                assert!(v.len() <= 100);
            }
            v
        };
        assert_eq!(run(), run());
    }
}
