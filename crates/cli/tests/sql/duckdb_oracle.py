"""The oracle of the SQL tests (crates/cli/tests/sql/nexmark.rs): each Nexmark query evaluated as
a plain batch query by DuckDB over the same JSON-lines files xorflow reads, written as CSV with
xorflow's text forms (timestamps `yyyy-MM-dd HH:mm:ss.SSS`, NULL as an empty field).

Window table functions are written as plain GROUP BY over the window start computed from the
epoch (floor(ms / size) * size), HOP windows by joining each row with the k = 0..size/slide-1
windows it belongs to; Flink's NULL where DuckDB gives '' (REGEXP_EXTRACT, SPLIT_INDEX) is made
explicit.

usage: duckdb_oracle.py DATA_DIR OUT_DIR QUERY... (writes OUT_DIR/QUERY.oracle.csv for each)
"""
import csv
import datetime
import decimal
import sys

import duckdb

TABLES = {
    "person": "id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, "
    "state VARCHAR, dateTime TIMESTAMP, extra VARCHAR",
    "auction": "id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, "
    "dateTime TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra VARCHAR",
    "bid": "auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, "
    "dateTime TIMESTAMP, extra VARCHAR",
}

# ms since the epoch of a timestamp, and the start of its window of `size` ms.
MS = "epoch_ms({t})"
START = "make_timestamp(((epoch_ms({t}) // {size}) * {size}) * 1000)"

CHANNEL_RE = "'(&|^)channel_id=([^&]*)'"

def ranks(field, price):
    return (f"count(*) FILTER (WHERE price < 10000), "
            f"count(*) FILTER (WHERE price >= 10000 AND price < 1000000), "
            f"count(*) FILTER (WHERE price >= 1000000)") if field is None else (
            f"count(DISTINCT {field}), "
            f"count(DISTINCT {field}) FILTER (WHERE price < 10000), "
            f"count(DISTINCT {field}) FILTER (WHERE price >= 10000 AND price < 1000000), "
            f"count(DISTINCT {field}) FILTER (WHERE price >= 1000000)")


DAY = "strftime(dateTime, '%Y-%m-%d')"


QUERIES = {
    "q0": "SELECT auction, bidder, price, dateTime, extra FROM bid",
    "q1": "SELECT auction, bidder, 0.908 * price AS price, dateTime, extra FROM bid",
    "q2": "SELECT auction, price FROM bid WHERE auction % 123 = 0",
    "q3": """SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person P ON A.seller = P.id
             WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA')""",
    # Flink's AVG of a BIGINT is a BIGINT: the sum divided by the count, truncated.
    "q4": """WITH Q AS (SELECT max(B.price) AS final, A.category FROM auction A, bid B
                        WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
                        GROUP BY A.id, A.category)
             SELECT category, sum(final) // count(final) FROM Q GROUP BY category""",
    "q5": """WITH w AS (
               SELECT auction, make_timestamp(((epoch_ms(dateTime) // 2000) * 2000 - k * 2000) * 1000) AS starttime
               FROM bid CROSS JOIN range(0, 5) r(k)),
             c AS (SELECT auction, starttime, count(*) AS num FROM w GROUP BY auction, starttime),
             m AS (SELECT starttime, max(num) AS maxn FROM c GROUP BY starttime)
             SELECT c.auction, c.num FROM c JOIN m ON c.starttime = m.starttime AND c.num >= m.maxn""",
    "q7": f"""WITH m AS (SELECT max(price) AS maxprice,
                         {START.format(t='dateTime', size=10000)} + INTERVAL 10 SECOND AS dt
                       FROM bid GROUP BY 2)
             SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra FROM bid B JOIN m
             ON B.price = m.maxprice
             WHERE B.dateTime BETWEEN m.dt - INTERVAL 10 SECOND AND m.dt""",
    "q8": f"""WITH p AS (SELECT DISTINCT id, name, {START.format(t='dateTime', size=10000)} AS s FROM person),
                  a AS (SELECT DISTINCT seller, {START.format(t='dateTime', size=10000)} AS s FROM auction)
             SELECT p.id, p.name, p.s FROM p JOIN a ON p.id = a.seller AND p.s = a.s""",
    "q9": """SELECT id, itemName, description, initialBid, reserve, dateTime, expires, seller, category,
               extra, auction, bidder, price, bid_dateTime, bid_extra FROM (
               SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime,
                 B.extra AS bid_extra,
                 ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
               FROM auction A, bid B
               WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires)
             WHERE rownum <= 1""",
    # Sessions: a bid 10 s or more after the bidder's previous one starts a new session
    # (docs/sql.md: Flink also merges sessions that only touch, at exactly 10 s).
    "q11": """WITH o AS (SELECT bidder, dateTime,
                        CASE WHEN dateTime - lag(dateTime) OVER (PARTITION BY bidder ORDER BY dateTime)
                                  < INTERVAL 10 SECOND THEN 0 ELSE 1 END AS new FROM bid),
                  s AS (SELECT bidder, dateTime,
                        sum(new) OVER (PARTITION BY bidder ORDER BY dateTime
                                       ROWS UNBOUNDED PRECEDING) AS sid FROM o)
             SELECT bidder, count(*), min(dateTime), max(dateTime) + INTERVAL 10 SECOND
             FROM s GROUP BY bidder, sid""",
    "q14": """SELECT auction, bidder, 0.908 * price AS price,
                CASE WHEN hour(dateTime) >= 8 AND hour(dateTime) <= 18 THEN 'dayTime'
                     WHEN hour(dateTime) <= 6 OR hour(dateTime) >= 20 THEN 'nightTime'
                     ELSE 'otherTime' END AS bidTimeType,
                dateTime, extra, length(extra) - length(replace(extra, 'c', '')) AS c_counts
              FROM bid WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000""",
    "q15": f"""SELECT {DAY}, count(*), {ranks(None, 'price')}, {ranks('bidder', 'price')},
                 {ranks('auction', 'price')} FROM bid GROUP BY 1""",
    "q16": f"""SELECT channel, {DAY}, max(strftime(dateTime, '%H:%M')), count(*),
                 {ranks(None, 'price')}, {ranks('bidder', 'price')}, {ranks('auction', 'price')}
               FROM bid GROUP BY 1, 2""",
    "q17": f"""SELECT auction, {DAY}, count(*), {ranks(None, 'price')}, min(price), max(price),
                 sum(price) // count(price), sum(price) FROM bid GROUP BY 1, 2""",
    "q18": """SELECT auction, bidder, price, channel, url, dateTime, extra FROM (
                SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY dateTime DESC)
                  AS rank_number FROM bid) WHERE rank_number <= 1""",
    "q19": """SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC)
                AS rank_number FROM bid) WHERE rank_number <= 10""",
    "q20": """SELECT auction, bidder, price, channel, url, B.dateTime, B.extra, itemName, description,
                initialBid, reserve, A.dateTime, expires, seller, category, A.extra
              FROM bid B JOIN auction A ON B.auction = A.id WHERE A.category = 10""",
    "q21": f"""SELECT auction, bidder, price, channel,
                CASE WHEN lower(channel) = 'apple' THEN '0'
                     WHEN lower(channel) = 'google' THEN '1'
                     WHEN lower(channel) = 'facebook' THEN '2'
                     WHEN lower(channel) = 'baidu' THEN '3'
                     ELSE CASE WHEN regexp_matches(url, {CHANNEL_RE})
                               THEN regexp_extract(url, {CHANNEL_RE}, 2) END END AS channel_id
              FROM bid
              WHERE regexp_matches(url, {CHANNEL_RE})
                 OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')""",
    "q22": """SELECT auction, bidder, price, channel,
                CASE WHEN len(string_split(url, '/')) > 3 THEN string_split(url, '/')[4] END,
                CASE WHEN len(string_split(url, '/')) > 4 THEN string_split(url, '/')[5] END,
                CASE WHEN len(string_split(url, '/')) > 5 THEN string_split(url, '/')[6] END
              FROM bid""",
    # Not Nexmark: the recovery test's query (crates/cli/tests/sql/recovery.rs).
    "recovery": f"""SELECT auction, {START.format(t='dateTime', size=1000)} AS window_start,
                     count(*), sum(price), max(price), count(DISTINCT bidder)
                   FROM bid GROUP BY 1, 2""",
    # Not Nexmark: crates/cli/tests/sql/queries/cumulate.sql and session.sql.
    "cumulate": """SELECT auction, make_timestamp(s * 1000), make_timestamp((s + k * 2000) * 1000),
                     count(*), max(price)
                   FROM (SELECT *, (epoch_ms(dateTime) // 10000) * 10000 AS s FROM bid)
                   CROSS JOIN range(1, 6) r(k)
                   WHERE s + k * 2000 > epoch_ms(dateTime)
                   GROUP BY 1, 2, 3""",
    "session": """WITH o AS (SELECT bidder, dateTime,
                        CASE WHEN dateTime - lag(dateTime) OVER (PARTITION BY bidder ORDER BY dateTime)
                                  < INTERVAL 10 SECOND THEN 0 ELSE 1 END AS new FROM bid),
                  s AS (SELECT bidder, dateTime,
                        sum(new) OVER (PARTITION BY bidder ORDER BY dateTime
                                       ROWS UNBOUNDED PRECEDING) AS sid FROM o)
             SELECT bidder, min(dateTime), max(dateTime) + INTERVAL 10 SECOND, count(*)
             FROM s GROUP BY bidder, sid""",
    # Not Nexmark: crates/cli/tests/sql/queries/hop_agg.sql (Flink's AVG of a BIGINT truncates).
    "hop_agg": """WITH w AS (
                    SELECT *, (epoch_ms(dateTime) // 2000) * 2000 - k * 2000 AS s
                    FROM bid CROSS JOIN range(0, 5) r(k))
                  SELECT auction, make_timestamp(s * 1000), make_timestamp((s + 10000) * 1000),
                    count(*), sum(price), min(price), max(price), sum(price) // count(price),
                    count(DISTINCT bidder), count(*) FILTER (WHERE price > 1000000)
                  FROM w GROUP BY auction, s""",
    # Not Nexmark: window aggregates of each kind.
    "tumble_agg": f"""SELECT auction, {START.format(t='dateTime', size=10000)} AS window_start,
                       count(*), sum(price), min(price), max(price), avg(price)::BIGINT,
                       count(DISTINCT bidder), count(*) FILTER (WHERE price > 1000000)
                     FROM bid GROUP BY 1, 2""",
}


def text(v):
    if v is None:
        return ""
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S.") + "%03d" % (v.microsecond // 1000)
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, decimal.Decimal):
        return str(v)
    return str(v)


def main():
    data, out_dir, queries = sys.argv[1], sys.argv[2], sys.argv[3:]
    con = duckdb.connect()
    for name, columns in TABLES.items():
        cols = ", ".join(
            "'%s': '%s'" % (c.split()[0], c.split()[1]) for c in columns.split(", ")
        )
        # Materialized once: every query reads the same tables.
        con.execute(
            f"CREATE TABLE {name} AS SELECT * FROM read_json('{data}/{name}.json', "
            f"format = 'newline_delimited', columns = {{{cols}}}, "
            f"timestampformat = '%Y-%m-%d %H:%M:%S.%g')"
        )
    for query in queries:
        rows = con.execute(QUERIES[query]).fetchall()
        with open(f"{out_dir}/{query}.oracle.csv", "w", newline="") as f:
            w = csv.writer(f)
            for r in rows:
                w.writerow([text(v) for v in r])


if __name__ == "__main__":
    main()
