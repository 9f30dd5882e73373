-- Not Nexmark: CUMULATE windows (2 s steps up to 10 s) per auction.
CREATE TABLE cumulate_out (auction BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT, m BIGINT)
WITH ('connector' = 'blackhole');
INSERT INTO cumulate_out
SELECT auction, window_start, window_end, count(*), max(price)
FROM TABLE(CUMULATE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end;
