from durations import parse_duration

DB_URL = "postgres://orders@db.prod.internal:5432/orders"
RETRY_AFTER = parse_duration("90s")


def pending(connection):
    return connection.execute("SELECT id FROM orders WHERE state = 'pending'").fetchall()
