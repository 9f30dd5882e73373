-- Nexmark q8 for `xorflow-lab bench nexmark`'s window latency runs: examples/nexmark/queries/q8.sql
-- with two changes, stated in docs/sql.md ("Nexmark"): the sink is 'print' (both engines print
-- each row as it comes; the bench stamps each line's arrival), and each row carries its window's
-- end as its last column, which the latency of the row is counted from.

CREATE TABLE nexmark_q8 (
  id  BIGINT,
  name  VARCHAR,
  stime  TIMESTAMP(3),
  window_end  TIMESTAMP(3)
) WITH (
  'connector' = 'print'
);

INSERT INTO nexmark_q8
SELECT P.id, P.name, P.starttime, P.endtime
FROM (
  SELECT id, name,
        window_start AS starttime,
        window_end AS endtime
  FROM TABLE(
            TUMBLE(TABLE person, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller,
        window_start AS starttime,
        window_end AS endtime
  FROM TABLE(
        TUMBLE(TABLE auction, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;