"""Business-hours schedules: listSchedules, createSchedule, getSchedule, updateSchedule,
deleteSchedule."""
from __future__ import annotations

from api.envelope import ok
from handlers.wire import deleted, iso
from models.kernel.db import utcnow
from models.telephony import schedules
from models.telephony.schedules import ScheduleRecord


def schedule_shape(record: ScheduleRecord, now) -> dict:
    return {"id": record.id, "workspaceId": record.workspace_id, "name": record.name, "timeZone": record.time_zone,
            "weeklyHours": record.weekly_hours, "exceptions": record.exceptions,
            "openNow": schedules.open_at(record, now), "createdBy": record.created_by,
            "createdAt": iso(record.created_at), "updatedAt": iso(record.updated_at)}


def list_schedules(workspaceId: str, limit: int = 20, offset: int = 0):
    page = schedules.list_schedules(workspace_id=workspaceId, limit=limit, offset=offset)
    now = utcnow()
    return ok({"schedules": [schedule_shape(s, now) for s in page.items], "pagination": page.pagination()})


def create_schedule(workspaceId: str, body: dict, principal):
    record = schedules.create(principal, workspace_id=workspaceId, name=body["name"], time_zone=body["timeZone"],
                              weekly_hours=body["weeklyHours"], exceptions=body.get("exceptions"))
    return ok({"schedule": schedule_shape(record, utcnow())}, "Schedule created")


def get_schedule(workspaceId: str, scheduleId: str):
    record = schedules.get(workspace_id=workspaceId, schedule_id=scheduleId)
    return ok({"schedule": schedule_shape(record, utcnow())})


def update_schedule(workspaceId: str, scheduleId: str, body: dict):
    record = schedules.update(workspace_id=workspaceId, schedule_id=scheduleId, name=body.get("name"),
                              time_zone=body.get("timeZone"), weekly_hours=body.get("weeklyHours"),
                              exceptions=body.get("exceptions"))
    return ok({"schedule": schedule_shape(record, utcnow())}, "Schedule updated")


def delete_schedule(workspaceId: str, scheduleId: str):
    schedules.delete(workspace_id=workspaceId, schedule_id=scheduleId)
    return deleted(scheduleId, "Schedule deleted")
