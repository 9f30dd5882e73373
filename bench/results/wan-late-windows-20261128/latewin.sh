#!/bin/bash
# One 4-process YSB run at 22,000 events/s behind the delay router at 100 ms RTT, with the
# credit-exhaustion debug lines on; output in $1.
set -u
OUT=$1; mkdir -p $OUT; cd $OUT
X=/work/main/target/release/xorflow
IN=$(ls -d /tmp/wanout2/wan-*)
P=lw$RANDOM
$X delay-router --hosts 4 --prefix $P --rtt 100ms --exit-with-parent > router.out 2> router.txt &
RP=$!
sleep 3
for i in 0 1 2 3; do echo "10.78.0.$((i+1)):7700"; done > hosts
START=$(( ( $(date +%s) + 20 ) * 1000 ))
for i in 0 1 2 3; do
  RUST_LOG=xorflow::credit=debug ip netns exec $P$i $X bench ysb --rate 22000 --duration 30s --workers 1 \
    --events $IN/kafka-json.txt --ad-campaigns $IN/ad-to-campaign-ids.txt --output $OUT/counts.csv \
    --sources 4 --json --start-ms $START ${EXTRA:-} --hostfile hosts --process $i --cluster-token tok123 > p$i.out 2> p$i.err &
done
wait %2 %3 %4 %5
kill $RP; wait $RP
grep -o '"window_p99_ms_by_process":\[[^]]*\]' p0.out
for i in 0 1 2 3; do echo "p$i last-credit lines: $(grep -c 'spent the last credit' p$i.err)"; done
