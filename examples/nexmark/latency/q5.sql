-- Nexmark q5 for `xorflow-lab bench nexmark`'s window latency runs: examples/nexmark/queries/q5.sql
-- with two changes, stated in docs/sql.md ("Nexmark"): the sink is 'print' (both engines print
-- each row as it comes; the bench stamps each line's arrival), and each row carries its window's
-- end as its last column, which the latency of the row is counted from.

CREATE TABLE nexmark_q5 (
  auction  BIGINT,
  num  BIGINT,
  window_end  TIMESTAMP(3)
) WITH (
  'connector' = 'print'
);

INSERT INTO nexmark_q5
SELECT AuctionBids.auction, AuctionBids.num, AuctionBids.endtime
 FROM (
   SELECT
     auction,
     count(*) AS num,
     window_start AS starttime,
     window_end AS endtime
     FROM TABLE(
             HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
 ) AS AuctionBids
 JOIN (
   SELECT
     max(CountBids.num) AS maxn,
     CountBids.starttime,
     CountBids.endtime
   FROM (
     SELECT
       count(*) AS num,
       window_start AS starttime,
       window_end AS endtime
     FROM TABLE(
                HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
     ) AS CountBids
   GROUP BY CountBids.starttime, CountBids.endtime
 ) AS MaxBids
 ON AuctionBids.starttime = MaxBids.starttime AND
    AuctionBids.endtime = MaxBids.endtime AND
    AuctionBids.num >= MaxBids.maxn;