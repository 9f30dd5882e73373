-- Nexmark q7 for `xorflow-lab bench nexmark`'s window latency runs: examples/nexmark/queries/q7.sql
-- with two changes, stated in docs/sql.md ("Nexmark"): the sink is 'print' (both engines print
-- each row as it comes; the bench stamps each line's arrival), and each row carries its window's
-- end as its last column, which the latency of the row is counted from.

CREATE TABLE nexmark_q7 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  `dateTime`  TIMESTAMP(3),
  extra  VARCHAR,
  window_end  TIMESTAMP(3)
) WITH (
  'connector' = 'print'
);

INSERT INTO nexmark_q7
SELECT B.auction, B.price, B.bidder, B.`dateTime`, B.extra, B1.`dateTime`
from bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end as `dateTime`
  FROM TABLE(
          TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.`dateTime` BETWEEN B1.`dateTime`  - INTERVAL '10' SECOND AND B1.`dateTime`;