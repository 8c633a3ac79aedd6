"""Dashboard widgets over HTTP: created, read, listed in dashboard order, changed and deleted; every
field at its bounds and just past them; names unique per dashboard without regard to case (409
naming the holder, also for twenty creations at once); at most 100 per workspace; another
workspace's widgets, agents and fields; and the data of a widget, equal to what GET /call/metrics
and GET /analytics/structured-data answer for the same query."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from models.dashboards.widgets import WidgetRecord, widget_range
from models.kernel.db import utcnow
from tests.support import factories
from tests.support.client import owner
from tests.support.threads import run_threads

FIELDS = {"id", "workspaceId", "dashboard", "name", "source", "metric", "fieldId", "aggregation", "filters", "groupBy",
          "granularity", "range", "chartType", "position", "createdBy", "createdAt", "updatedAt"}


def create(api, expect: int = 200, **body) -> dict:
    body.setdefault("name", "Calls per day")
    body.setdefault("source", "calls")
    if body["source"] == "calls":
        body.setdefault("metric", "count")
    result = api("POST", "/analytics/widgets", expect, json=body)
    return result["widget"] if expect == 200 else result


def patch(api, widget_id: str, expect: int = 200, **body) -> dict:
    result = api("PATCH", f"/analytics/widgets/{widget_id}", expect, json=body)
    return result["widget"] if expect == 200 else result


def test_a_widget_is_created_read_listed_changed_and_deleted(platform):
    api = owner(platform)
    made = create(api)
    assert set(made) == FIELDS
    assert {k: made[k] for k in FIELDS - {"id", "createdAt", "updatedAt"}} == {
        "workspaceId": api.actor.workspace_id, "dashboard": "default", "name": "Calls per day", "source": "calls",
        "metric": "count", "fieldId": None, "aggregation": None, "filters": {}, "groupBy": None, "granularity": "day",
        "range": {"last": 7, "unit": "day"}, "chartType": "line", "position": {"x": 0, "y": 0, "w": 6, "h": 4},
        "createdBy": api.actor.user_id}
    assert api("GET", f"/analytics/widgets/{made['id']}")["widget"] == made
    assert api("GET", "/analytics/widgets") == {"widgets": [made], "pagination": {"total": 1, "limit": 20, "offset": 0}}
    changed = patch(api, made["id"], chartType="bar", metric="answerRate")
    assert (changed["chartType"], changed["metric"], changed["name"]) == ("bar", "answerRate", "Calls per day")
    assert changed["createdAt"] == made["createdAt"] and changed["updatedAt"] >= made["updatedAt"]
    assert api("DELETE", f"/analytics/widgets/{made['id']}") == {"id": made["id"], "deleted": True}
    for method, path in (("GET", ""), ("GET", "/data"), ("DELETE", "")):
        assert api(method, f"/analytics/widgets/{made['id']}{path}", 404)["message"] == \
            f"No widget {made['id']} in this workspace."
    patch(api, made["id"], 404, chartType="area")


def test_every_field_is_kept_as_given(platform):
    api = owner(platform)
    agent = factories.agent(api.actor)
    full = {"name": "Answer rate by agent", "dashboard": "Sales", "source": "calls", "metric": "answerRate",
            "filters": {"agentId": agent, "callType": "outbound"}, "groupBy": "agent", "granularity": "hour",
            "range": {"last": 48, "unit": "hour"}, "chartType": "area", "position": {"x": 6, "y": 2, "w": 6, "h": 3}}
    made = create(api, **full)
    assert {k: made[k] for k in full} == full
    field = factories.insight(api.actor, "score", "number")
    structured = create(api, name="  Score  ", dashboard=" Sales ", source="structured-data", fieldId=field,
                        aggregation="avg", granularity="month", range={"last": 12, "unit": "month"}, chartType="number")
    assert (structured["name"], structured["dashboard"], structured["fieldId"], structured["aggregation"],
            structured["metric"]) == ("Score", "Sales", field, "avg", None)


def test_without_a_position_a_widget_takes_a_new_row_at_the_bottom_of_its_dashboard(platform):
    api = owner(platform)
    assert create(api, name="First")["position"] == {"x": 0, "y": 0, "w": 6, "h": 4}
    create(api, name="Tall", position={"x": 6, "y": 1, "w": 6, "h": 10})
    assert create(api, name="Next")["position"] == {"x": 0, "y": 11, "w": 6, "h": 4}
    assert create(api, name="Elsewhere", dashboard="Other")["position"] == {"x": 0, "y": 0, "w": 6, "h": 4}


def test_the_list_is_by_dashboard_then_top_to_bottom_and_left_to_right(platform):
    api = owner(platform)
    made = {}
    for name, dashboard, x, y in (("c", "b-board", 0, 0), ("b", "a-board", 6, 3), ("a", "A-board", 0, 3),
                                  ("d", "a-board", 6, 0), ("e", "b-board", 6, 0)):
        made[name] = create(api, name=name, dashboard=dashboard, position={"x": x, "y": y, "w": 6, "h": 3})
    listed = api("GET", "/analytics/widgets")
    assert [w["name"] for w in listed["widgets"]] == ["d", "a", "b", "c", "e"]
    assert [w["name"] for w in api("GET", "/analytics/widgets", dashboard="A-BOARD")["widgets"]] == ["d", "a", "b"]
    page = api("GET", "/analytics/widgets", limit=2, offset=1)
    assert [w["name"] for w in page["widgets"]] == ["a", "b"] and page["pagination"] == {"total": 5, "limit": 2,
                                                                                      "offset": 1}
    assert api("GET", "/analytics/widgets", dashboard="none")["widgets"] == []
    assert api("GET", "/analytics/widgets", offset=5) == {"widgets": [], "pagination": {"total": 5, "limit": 20,
                                                                                         "offset": 5}}


# --- each field at its bounds and just past them -------------------------------------------------

def test_the_name_and_dashboard_are_1_to_100_characters_once_trimmed(platform):
    api = owner(platform)
    assert create(api, name="N" * 100)["name"] == "N" * 100
    assert create(api, name="D", dashboard="D" * 100)["dashboard"] == "D" * 100
    for field in ("name", "dashboard"):
        assert field in create(api, 400, **{field: "X" * 101})["message"]
        assert field in create(api, 400, **{field: ""})["message"]
        assert create(api, 400, **{field: "   "})["message"] == \
            f"{field} must be 1 to 100 characters once trimmed; 0 given."
        assert field in create(api, 400, **{field: "a\tb"})["message"]
    assert "name" in api("POST", "/analytics/widgets", 400, json={"source": "calls", "metric": "count"})["message"]


def test_a_widget_of_calls_names_a_metric_and_one_of_structured_data_a_field_and_an_aggregation(platform):
    api = owner(platform)
    field = factories.insight(api.actor, "score", "number")
    for metric in ("count", "answered", "completed", "answerRate", "completionRate", "durationAvg", "durationP50",
                   "durationP90", "endReasons"):
        assert create(api, name=metric, metric=metric)["metric"] == metric
    assert api("POST", "/analytics/widgets", 400, json={"name": "x", "source": "calls"})["message"].startswith(
        "metric is required for a widget of calls")
    assert "metric" in create(api, 400, name="x", metric="calls")["message"]
    assert create(api, 400, name="x", fieldId=field, aggregation="avg")["message"].startswith(
        "fieldId and aggregation are for widgets of source structured-data")
    for aggregation in ("count", "avg", "sum", "min", "max", "trueCount", "falseCount", "trueRate", "valueCounts"):
        assert create(api, name=f"s-{aggregation}", source="structured-data", fieldId=field,
                      aggregation=aggregation)["aggregation"] == aggregation
    structured = {"name": "y", "source": "structured-data"}
    assert create(api, 400, **structured, aggregation="avg")["message"] == \
        "fieldId and aggregation are required for a widget of structured data."
    assert create(api, 400, **structured, fieldId=field)["message"] == \
        "fieldId and aggregation are required for a widget of structured data."
    assert create(api, 400, **structured, fieldId=field, aggregation="avg", metric="count")["message"].startswith(
        "metric and groupBy are for widgets of source calls")
    assert create(api, 400, **structured, fieldId=field, aggregation="avg", groupBy="agent")["message"].startswith(
        "metric and groupBy are for widgets of source calls")
    assert create(api, 400, **structured, fieldId=field, aggregation="avg", granularity="total")["message"] == \
        "granularity total is for widgets of calls; structured data takes hour, day or month."
    assert create(api, 400, **structured, fieldId=field + 1000, aggregation="avg")["message"] == \
        f"fieldId {field + 1000} names no structured-data field of this workspace."
    theirs = factories.insight(owner(platform).actor, "theirs", "number")
    assert create(api, 400, **structured, fieldId=theirs, aggregation="avg")["message"] == \
        f"fieldId {theirs} names no structured-data field of this workspace."
    assert "source" in create(api, 400, name="z", source="audio")["message"]


def test_filters_name_an_agent_of_this_workspace_and_a_call_type(platform):
    api = owner(platform)
    ours = factories.agent(api.actor)
    theirs = factories.agent(owner(platform).actor)
    assert create(api, name="a", filters={"agentId": ours})["filters"] == {"agentId": ours}
    assert create(api, name="b", filters={"callType": "web"})["filters"] == {"callType": "web"}
    for agent_id in (theirs, "0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"):
        assert create(api, 400, name="c", filters={"agentId": agent_id})["message"] == \
            "filters.agentId names no agent of this workspace."
    assert "callType" in create(api, 400, name="c", filters={"callType": "sms"})["message"]
    assert "status" in create(api, 400, name="c", filters={"status": "ended"})["message"]
    assert api("GET", "/analytics/widgets")["pagination"]["total"] == 2


def test_the_range_is_1_to_1000_units_back_and_at_most_10000_buckets(platform):
    api = owner(platform)
    assert create(api, name="a", range={"last": 1, "unit": "hour"})["range"] == {"last": 1, "unit": "hour"}
    assert create(api, name="b", range={"last": 1000, "unit": "month"}, granularity="month")["range"]["last"] == 1000
    assert create(api, name="c", range={"last": 1000, "unit": "month"}, granularity="total")["range"]["last"] == 1000
    for last in (0, 1001):
        assert "range.last" in create(api, 400, name="d", range={"last": last, "unit": "day"})["message"]
    assert "range" in create(api, 400, name="d", range={"last": 3, "unit": "week"})["message"]
    assert "range" in create(api, 400, name="d", range={"last": 3})["message"]
    # Hourly buckets: 416 days (9,985 buckets at most) but not 417 (10,009).
    assert create(api, name="e", range={"last": 416, "unit": "day"}, granularity="hour")["range"]["last"] == 416
    assert create(api, 400, name="f", range={"last": 417, "unit": "day"}, granularity="hour")["message"] == (
        "range of the last 417 days spans up to 10009 hour buckets; at most 10000 are allowed: shorten the range "
        "or take a coarser granularity.")
    # Daily buckets: 322 months of at most 31 days (9,983) but not 323 (10,014).
    assert create(api, name="g", range={"last": 322, "unit": "month"})["range"]["last"] == 322
    assert "10014 day buckets" in create(api, 400, name="h", range={"last": 323, "unit": "month"})["message"]


def test_the_position_is_on_a_grid_12_columns_wide(platform):
    api = owner(platform)
    assert create(api, name="a", position={"x": 11, "y": 999, "w": 1, "h": 24})["position"] == \
        {"x": 11, "y": 999, "w": 1, "h": 24}
    assert create(api, name="b", position={"x": 0, "y": 0, "w": 12, "h": 1})["position"]["w"] == 12
    assert create(api, 400, name="c", position={"x": 11, "y": 0, "w": 2, "h": 1})["message"] == \
        "position.x + position.w must be at most 12, the grid's columns; 11 + 2 given."
    for bad in ({"x": 12}, {"x": -1}, {"y": 1000}, {"w": 0}, {"w": 13}, {"h": 0}, {"h": 25}):
        position = {"x": 0, "y": 0, "w": 1, "h": 1, **bad}
        assert f"position.{next(iter(bad))}" in create(api, 400, name="d", position=position)["message"], bad
    assert "position" in create(api, 400, name="d", position={"x": 0, "y": 0, "w": 1})["message"]
    for name, value in (("chartType", "radar"), ("granularity", "week"), ("groupBy", "type")):
        assert name in create(api, 400, name="e", **{name: value})["message"]


# --- names, the cap ------------------------------------------------------------------------------

def test_names_are_unique_per_dashboard_without_regard_to_case(platform):
    api = owner(platform)
    first = create(api, name="Calls per day")
    assert create(api, 409, name=" CALLS per DAY ")["message"] == (
        f"A widget named 'Calls per day' is on dashboard 'default' already ({first['id']}); names are unique per "
        "dashboard without regard to case.")
    assert create(api, 409, name="calls per day", dashboard="DEFAULT")["code"] == "conflict"
    other = create(api, name="Calls per day", dashboard="Sales")
    assert patch(api, other["id"], 409, dashboard="Default")["message"].startswith("A widget named 'Calls per day'")
    assert patch(api, first["id"], name="CALLS PER DAY")["name"] == "CALLS PER DAY"
    assert create(owner(platform), name="Calls per day")["name"] == "Calls per day"


def test_twenty_creations_of_one_name_at_once_make_one_widget(platform):
    api = owner(platform)

    def post(index: int) -> int:
        return platform.client.post("/api/v2/analytics/widgets", params={"workspaceId": api.actor.workspace_id},
                                    headers=api.actor.headers, json={"name": "Same" if index % 2 else "SAME",
                                                                     "source": "calls", "metric": "count"}).status_code

    statuses = run_threads(20, post)
    assert sorted(statuses) == [200] + [409] * 19, statuses
    assert api("GET", "/analytics/widgets")["pagination"]["total"] == 1


def test_a_workspace_holds_at_most_100_widgets(platform):
    api = owner(platform)
    ids = [factories.widget(api.actor) for _ in range(99)]
    last = create(api, name="The hundredth")
    assert create(api, 409, name="One more")["message"] == "A workspace has at most 100 widgets; delete one first."
    assert create(owner(platform), name="Another workspace's")["name"] == "Another workspace's"
    api("DELETE", f"/analytics/widgets/{ids[0]}")
    assert create(api, name="One more")["name"] == "One more"
    assert api("GET", "/analytics/widgets")["pagination"]["total"] == 100 and last["id"]


def test_twenty_creations_at_once_past_the_cap_keep_it(platform):
    api = owner(platform)
    for _ in range(95):
        factories.widget(api.actor)

    def post(index: int) -> int:
        return platform.client.post("/api/v2/analytics/widgets", params={"workspaceId": api.actor.workspace_id},
                                    headers=api.actor.headers,
                                    json={"name": f"Concurrent {index}", "source": "calls",
                                          "metric": "count"}).status_code

    statuses = run_threads(20, post)
    assert sorted(statuses) == [200] * 5 + [409] * 15, statuses
    assert api("GET", "/analytics/widgets")["pagination"]["total"] == 100


# --- changes -------------------------------------------------------------------------------------

def test_patch_merges_the_fields_given_and_holds_the_whole_to_the_rules(platform):
    api = owner(platform)
    agent = factories.agent(api.actor)
    field = factories.insight(api.actor, "score", "number")
    made = create(api, filters={"agentId": agent, "callType": "inbound"}, groupBy="agent",
                  position={"x": 0, "y": 0, "w": 6, "h": 4})
    assert patch(api, made["id"], position={"x": 6})["position"] == {"x": 6, "y": 0, "w": 6, "h": 4}
    assert patch(api, made["id"], 400, position={"w": 7})["message"].startswith("position.x + position.w")
    assert patch(api, made["id"], filters=None)["filters"] == {}
    assert patch(api, made["id"], groupBy=None)["groupBy"] is None
    # To structured data: the metric cleared in the same change, else 400.
    assert patch(api, made["id"], 400, source="structured-data", fieldId=field, aggregation="sum")["message"] \
        .startswith("metric and groupBy are for widgets of source calls")
    turned = patch(api, made["id"], source="structured-data", fieldId=field, aggregation="sum", metric=None)
    assert (turned["source"], turned["metric"], turned["fieldId"], turned["aggregation"]) == \
        ("structured-data", None, field, "sum")
    assert patch(api, made["id"], 400, granularity="total")["message"].startswith("granularity total is for")
    assert patch(api, made["id"], 400, filters={"agentId": factories.agent(owner(platform).actor)})["message"] == \
        "filters.agentId names no agent of this workspace."
    back = patch(api, made["id"], source="calls", metric="completed", fieldId=None, aggregation=None)
    assert (back["source"], back["metric"], back["fieldId"]) == ("calls", "completed", None)
    api("PATCH", f"/analytics/widgets/{made['id']}", 400, json={})
    assert api("GET", f"/analytics/widgets/{made['id']}")["widget"] == back


def test_another_workspaces_widget_is_not_found(platform):
    api, other = owner(platform), owner(platform)
    theirs = create(other, name="Theirs")
    for method, path in (("GET", ""), ("GET", "/data"), ("DELETE", "")):
        api(method, f"/analytics/widgets/{theirs['id']}{path}", 404)
    patch(api, theirs["id"], 404, name="Mine")
    assert other("GET", f"/analytics/widgets/{theirs['id']}")["widget"] == theirs


# --- data ------------------------------------------------------------------------------------------

def test_the_data_of_a_widget_of_calls_is_what_call_metrics_answers(platform):
    api = owner(platform)
    agents = [factories.agent(api.actor, name="Billing"), factories.agent(api.actor, name="Sales")]
    now = utcnow()
    for n in range(12):
        factories.call(api.actor, started_at=now - timedelta(hours=n * 5, minutes=7), duration_ms=1000.0 * (n + 1),
                       agent_id=agents[n % 2] if n % 3 else None, call_type=("inbound", "outbound")[n % 2],
                       ended_reason=("customer-ended-call", "voicemail", "silence-timed-out")[n % 3])
    factories.call(api.actor, started_at=now - timedelta(days=9))  # outside every range below
    cases = [({"metric": "count"}, {}),
             ({"metric": "answerRate", "groupBy": "agent", "granularity": "hour",
               "range": {"last": 48, "unit": "hour"}}, {"groupBy": "agent", "granularity": "hour"}),
             ({"metric": "durationP90", "filters": {"agentId": agents[1], "callType": "outbound"},
               "granularity": "total"}, {"agentId": agents[1], "callType": "outbound", "granularity": "total"}),
             ({"metric": "count", "granularity": "month", "range": {"last": 2, "unit": "month"}},
              {"granularity": "month"})]
    for index, (widget, query) in enumerate(cases):
        made = create(api, name=f"w{index}", **widget)
        data = api("GET", f"/analytics/widgets/{made['id']}/data")
        assert data["widget"] == made and "structuredData" not in data
        got = data["callMetrics"]
        expected = api("GET", "/call/metrics", since=got["timeRange"]["start"], until=got["timeRange"]["end"], **query)
        assert {**got, "generatedAt": None} == {**expected, "generatedAt": None}, widget
        assert sum(b["count"] for s in got["series"] for b in s["buckets"]) > 0
    # The range ends now, back by the widget's range.
    data = api("GET", f"/analytics/widgets/{create(api, name='week')['id']}/data")["callMetrics"]
    start, end = (datetime.fromisoformat(data["timeRange"][k][:-1]) for k in ("start", "end"))
    assert end - start == timedelta(days=7) and end.microsecond == 0
    assert timedelta(0) <= utcnow() - end < timedelta(seconds=30)


def test_the_data_of_a_widget_of_structured_data_is_what_the_analytics_answer(platform):
    api = owner(platform)
    agent = factories.agent(api.actor)
    field = factories.insight(api.actor, "score", "number", agents=[agent])
    factories.insight(api.actor, "other", "number")
    now = utcnow()
    for n in range(6):
        factories.call(api.actor, started_at=now - timedelta(hours=n * 7, minutes=1), agent_id=agent if n % 2 else None,
                       call_type="web" if n < 3 else "inbound", structured_data={"score": n, "other": 1})
    made = create(api, name="Score", source="structured-data", fieldId=field, aggregation="avg", granularity="hour",
                  range={"last": 2, "unit": "day"}, filters={"callType": "web"})
    data = api("GET", f"/analytics/widgets/{made['id']}/data")
    assert data["widget"] == made and "callMetrics" not in data
    got = data["structuredData"]
    expected = api("GET", "/analytics/structured-data", since=got["timeRange"]["start"],
                   until=got["timeRange"]["end"], granularity="hour", callType="web", structuredDataIds=str(field))
    assert {**got, "generatedAt": None} == {**expected, "generatedAt": None}
    assert [f["id"] for f in got["fields"]] == [field] and got["data"][0]["summary"]["count"] == 3
    # The field deleted: the widget stays, and its data says why there is none.
    api("DELETE", f"/insights/{field}")
    assert api("GET", f"/analytics/widgets/{made['id']}/data", 409)["message"] == \
        f"The widget's structured-data field {field} was deleted; give the widget another fieldId."


def test_grouped_data_past_10000_buckets_in_all_is_refused(platform):
    api = owner(platform)
    agents = [factories.agent(api.actor) for _ in range(2)]
    for agent in agents:
        factories.call(api.actor, agent_id=agent)
    made = create(api, groupBy="agent", granularity="hour", range={"last": 400, "unit": "day"})
    error = api("GET", f"/analytics/widgets/{made['id']}/data", 400)
    assert "buckets for each of 2 agents" in error["message"]
    patch(api, made["id"], range={"last": 200, "unit": "day"})
    assert len(api("GET", f"/analytics/widgets/{made['id']}/data")["callMetrics"]["series"]) == 2


@pytest.mark.parametrize("unit, last", [("hour", 5), ("day", 3), ("month", 1), ("month", 13)])
def test_a_range_goes_back_from_now_by_its_units(unit, last):
    record = WidgetRecord(*([None] * 11), last, unit, *([None] * 8))
    now = datetime(2026, 3, 31, 10, 20, 30, 456789)
    start, end = widget_range(record, now)
    assert end == datetime(2026, 3, 31, 10, 20, 30)
    assert start == {("hour", 5): datetime(2026, 3, 31, 5, 20, 30), ("day", 3): datetime(2026, 3, 28, 10, 20, 30),
                     ("month", 1): datetime(2026, 2, 28, 10, 20, 30),  # 31 March less a month: February's last day
                     ("month", 13): datetime(2025, 2, 28, 10, 20, 30)}[(unit, last)]
