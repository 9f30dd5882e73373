-- The Nexmark tables for Flink SQL, read from the files `xorflow nexmark generate --out DIR`
-- writes: the same three tables, columns and watermark as examples/nexmark/ddl_files.sql
-- (xorflow's), on Flink's filesystem connector and JSON format. The timestamps are written as
-- SQL text ("2015-07-15 00:00:00.001"), hence 'json.timestamp-format.standard' = 'SQL'.
-- ${DATA_DIR} is replaced by the main (NexmarkSql --data-dir) with the absolute path of DIR.

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
) WITH (
    'connector' = 'xorflow-replay', 'replay.origin' = '2015-07-15 00:00:00.000', 'replay.speed' = '10',
    'path' = '${DATA_DIR}/person.json',
    'format' = 'json',
    'json.timestamp-format.standard' = 'SQL'
);

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
) WITH (
    'connector' = 'xorflow-replay', 'replay.origin' = '2015-07-15 00:00:00.000', 'replay.speed' = '10',
    'path' = '${DATA_DIR}/auction.json',
    'format' = 'json',
    'json.timestamp-format.standard' = 'SQL'
);

CREATE TABLE bid (
    auction BIGINT,
    bidder BIGINT,
    price BIGINT,
    channel VARCHAR,
    url VARCHAR,
    `dateTime` TIMESTAMP(3),
    extra VARCHAR,
    WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
    'connector' = 'xorflow-replay', 'replay.origin' = '2015-07-15 00:00:00.000', 'replay.speed' = '10',
    'path' = '${DATA_DIR}/bid.json',
    'format' = 'json',
    'json.timestamp-format.standard' = 'SQL'
);
