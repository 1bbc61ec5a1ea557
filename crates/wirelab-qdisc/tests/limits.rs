//! 32-bit tc fields refuse larger values instead of clamping them (issue 22, item 4):
//! `pfifo limit 4294967296` used to build a FIFO with a 2^32-packet limit (tc says
//! "Illegal limit"), and sfq/cbq sizes were clamped to 4294967295.
use wirelab_qdisc::TcConfig;

#[test]
fn sizes_in_32_bit_fields_are_range_checked() {
    for (ok, bad) in [
        ("pfifo limit 4294967295", "pfifo limit 4294967296"),
        ("bfifo limit 3gb", "bfifo limit 4gb"),
        ("sfq quantum 4294967295", "sfq quantum 5gb"),
        ("cbq bandwidth 10mbit avpkt 1000", "cbq bandwidth 10mbit avpkt 4294967296"),
    ] {
        assert!(TcConfig::parse(ok).is_ok(), "{ok}");
        let e = TcConfig::parse(bad).unwrap_err().to_string();
        assert!(e.contains("must be at most 4294967295"), "{bad}: {e}");
    }
    let e = TcConfig::parse("pfifo limit 0.4").unwrap_err().to_string();
    assert!(e.contains("whole number of bytes"), "{e}");
}
