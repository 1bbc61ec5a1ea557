#!/bin/bash
# Baseline for wirelab's own ECN scripts: Linux defaults made explicit, no timestamps
# (simpler option lists), pfifo on the tun device so nothing paces.
sysctl -q net.ipv4.tcp_timestamps=0
sysctl -q net.ipv4.tcp_sack=1
sysctl -q net.ipv4.tcp_window_scaling=1
sysctl -q net.ipv4.tcp_rmem="4096 131072 6291456"
sysctl -q net.ipv4.tcp_wmem="4096 16384 4194304"
sysctl -q net.ipv4.tcp_congestion_control=cubic
sysctl -q net.ipv4.tcp_ecn=2
sysctl -q net.ipv4.tcp_ecn_fallback=1
sysctl -q net.ipv4.tcp_slow_start_after_idle=0
tc qdisc add dev tun0 root pfifo
# MSS-sized segments on the wire (wirelab has no TSO)
ethtool -K tun0 tso off gso off > /dev/null 2>&1
