//! The TCP engine's receive-window hook, re-exported from `wirelab_tcp` so a
//! [`crate::TcpRateController`] can be boxed straight into
//! `TcpEndpoint::set_rcv_window_policy`.
pub use wirelab_tcp::RcvWindowPolicy;
