-- Nexmark q11 for `xorflow-lab bench nexmark`'s window latency runs: examples/nexmark/queries/q11.sql
-- with one change, stated in docs/sql.md ("Nexmark"): the sink is 'print' (both engines print
-- each row as it comes; the bench stamps each line's arrival);
-- its rows already end with their session window's end, which their latency is counted from.

CREATE TABLE nexmark_q11 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH (
  'connector' = 'print'
);

INSERT INTO nexmark_q11
SELECT
    B.bidder,
    count(*) as bid_count,
    SESSION_START(B.`dateTime`, INTERVAL '10' SECOND) as starttime,
    SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) as endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND);