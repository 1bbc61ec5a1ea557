#!/bin/sh
# The host settings wirelab's own packetdrill scripts assume (project-licensed). The
# same file runs on the real kernel (tests/kernel.rs) and, line by line, in wirelab's
# runner, which maps each sysctl to the engine's configuration.
sysctl -q net.ipv4.tcp_timestamps=1 net.ipv4.tcp_sack=1 net.ipv4.tcp_dsack=1
sysctl -q net.ipv4.tcp_frto=2 net.ipv4.tcp_reordering=3 net.ipv4.tcp_recovery=1
sysctl -q net.ipv4.tcp_congestion_control=cubic net.ipv4.tcp_slow_start_after_idle=0
sysctl -q net.ipv4.tcp_early_retrans=3 net.ipv4.tcp_thin_linear_timeouts=0
sysctl -q net.ipv4.tcp_rmem="4096 131072 6291456" net.ipv4.tcp_wmem="4096 16384 4194304"
sysctl -q net.ipv4.tcp_ecn=0
tc qdisc add dev tun0 root pfifo
