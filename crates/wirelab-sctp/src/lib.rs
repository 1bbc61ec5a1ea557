//! Sans-IO SCTP (RFC 9260) for wirelab.
pub mod wire;
