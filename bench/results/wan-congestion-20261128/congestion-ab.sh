#!/bin/bash
cd /work/main
for cc in cubic bbr cubic; do
  sysctl -w net.ipv4.tcp_congestion_control=$cc
  echo "=== $cc $(date)"
  target/release/xorflow bench wan --network netns --experiments mesh --no-flink --no-storm --rates 22000 --processes 4 --rtts 0,100 --repeat 1 --duration 20s --out /tmp/cc/$cc-$(date +%s) 2>&1 | tail -5
done
sysctl -w net.ipv4.tcp_congestion_control=bbr
echo done $(date)
