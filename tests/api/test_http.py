"""Response rendering shared by every blueprint (gitstore/api/http.py): the `Date` of a read,
formatted once a second, is still the second it was answered in."""

from __future__ import annotations

import time

from werkzeug.http import http_date, parse_date

from gitstore.api import create_app

GLOBAL = "/api/v1/config/environments/1/resources/astute/values"


def test_a_read_is_dated_the_second_it_is_answered(fuel_store):
    client = create_app({"TESTING": True}, store=fuel_store).test_client()
    assert client.put(GLOBAL, json={"a": 1}).status_code == 204
    dates = []
    for query in ("", "?effective", "?effective&show_lookup"):  # each answered by the app
        before = int(time.time())
        response = client.get(GLOBAL + query)
        after = time.time()
        assert response.status_code == 200
        assert response.headers.getlist("Date") == [response.headers["Date"]]
        date = parse_date(response.headers["Date"]).timestamp()
        assert before <= date <= after
        assert response.headers["Date"] == http_date(date)
        dates.append(date)
        time.sleep(max(0.0, before + 1.05 - time.time()))
    assert dates[0] < dates[1] < dates[2]


def test_a_body_of_too_many_values_is_refused_before_it_is_parsed(fuel_store, client):
    # `[{},{},...]`: 16 MiB of it parsed into 5.6 million objects, ~800 MB and 3 s of a worker
    # before any other check; counted first, a body of more values than a store can hold in a
    # few documents is refused for what it is.
    from gitstore.api.http import MAX_BODY_VALUES

    body = "[" + "{}," * MAX_BODY_VALUES + "{}]"
    response = client.put(
        "/api/v1/config/environments/1/resources/astute/values",
        data=body,
        content_type="application/json",
    )
    assert response.status_code == 400
    message = response.get_json()["message"]
    assert f"more than {MAX_BODY_VALUES} values" in message and "request body" in message
