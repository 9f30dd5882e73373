-- Not Nexmark: the SESSION window table function, partitioned by bidder.
CREATE TABLE session_out (bidder BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT)
WITH ('connector' = 'blackhole');
INSERT INTO session_out
SELECT bidder, window_start, window_end, count(*)
FROM TABLE(SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
