-- The Nexmark tables read from the files `xorflow nexmark generate --out data/nexmark` writes
-- (JSON lines with the Nexmark DDL's field names; timestamps as Flink's JSON text, UTC).
-- Flink's Nexmark declares one table of all events with ROW columns and three views over it
-- (nexmark-flink's ddl_gen.sql, ddl_views.sql); xorflow declares the three tables directly,
-- with the same columns and the same watermark (4 s behind the newest event).

CREATE TABLE person (
    id BIGINT,
    name VARCHAR,
    emailAddress VARCHAR,
    creditCard VARCHAR,
    city VARCHAR,
    state VARCHAR,
    `dateTime` TIMESTAMP(3),
    extra VARCHAR,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH ('connector' = 'filesystem', 'path' = '/work/main/bench/results/nexmark-20261207T160210Z/data/person.json', 'format' = 'json');

CREATE TABLE auction (
    id BIGINT,
    itemName VARCHAR,
    description VARCHAR,
    initialBid BIGINT,
    reserve BIGINT,
    `dateTime` TIMESTAMP(3),
    expires TIMESTAMP(3),
    seller BIGINT,
    category BIGINT,
    extra VARCHAR,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH ('connector' = 'filesystem', 'path' = '/work/main/bench/results/nexmark-20261207T160210Z/data/auction.json', 'format' = 'json');

CREATE TABLE bid (
    auction BIGINT,
    bidder BIGINT,
    price BIGINT,
    channel VARCHAR,
    url VARCHAR,
    `dateTime` TIMESTAMP(3),
    extra VARCHAR,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH ('connector' = 'filesystem', 'path' = '/work/main/bench/results/nexmark-20261207T160210Z/data/bid.json', 'format' = 'json');
