-- The Nexmark tables generated in the sources themselves (crates/nexmark), each of one kind
-- of event (its table name), 10 M events in all: Flink Nexmark's 'events.num' and other options.
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
) WITH ('connector' = 'nexmark', 'events.num' = '1000000', 'first-event.rate' = '10000000');

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
) WITH ('connector' = 'nexmark', 'events.num' = '1000000', 'first-event.rate' = '10000000');

CREATE TABLE bid (
    auction BIGINT,
    bidder BIGINT,
    price BIGINT,
    channel VARCHAR,
    url VARCHAR,
    `dateTime` TIMESTAMP(3),
    extra VARCHAR,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'events.num' = '1000000', 'first-event.rate' = '10000000');
