-- Not Nexmark: HOP windows (10 s every 2 s, computed from 2 s slices) per auction, with every
-- kind of aggregate: each slice's partial aggregates must merge into the windows' results.
CREATE TABLE hop_agg_out (auction BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
    n BIGINT, total BIGINT, lo BIGINT, hi BIGINT, mean BIGINT, bidders BIGINT, big BIGINT)
WITH ('connector' = 'blackhole');
INSERT INTO hop_agg_out
SELECT auction, window_start, window_end, count(*), sum(price), min(price), max(price),
    avg(price), count(DISTINCT bidder), count(*) FILTER (WHERE price > 1000000)
FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end;
