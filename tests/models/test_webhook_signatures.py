"""The headers of a signed webhook (models.webhooks.signing_secrets.verify), read as strictly as
the Standard Webhooks reference reads them: each malformed form is refused naming its header and
its rule, and the well-formed forms beside it verify. The remembered webhook-ids of signed reports
(models.webhooks.replays): a replay is known within REMEMBER_S, each workspace on its own, and
old ids are forgotten and their rows deleted."""
from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks.webhooks import Webhook

from models.kernel import encryption
from models.kernel.db import session, utcnow
from models.kernel.errors import Unauthenticated
from models.webhooks import replays, signing_secrets
from models.webhooks.tables import ReceivedWebhook
from tests.support import factories

BODY = b'{"type": "end-of-call-report"}'


@pytest.fixture
def signer(db, tmp_path):
    """A workspace with a signing secret, and headers that secret signs for BODY now."""
    encryption.configure("a key for tests", tmp_path)
    owner = factories.workspace()
    with session():
        _, secret, _ = signing_secrets.rotate(factories.principal(owner), workspace_id=owner.workspace_id)
    return owner.workspace_id, signed(secret, "msg_1"), secret


def signed(secret: str, webhook_id: str) -> dict:
    at = datetime.now(UTC)
    return {"webhook-id": webhook_id, "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": Webhook(secret).sign(webhook_id, at, BODY.decode())}


def verify(workspace_id, headers, **changes):
    with session():
        return signing_secrets.verify(workspace_id, BODY, {**headers, **changes})


def refusal(workspace_id, headers, **changes) -> str:
    with pytest.raises(Unauthenticated) as caught:
        verify(workspace_id, headers, **changes)
    return caught.value.message


def test_a_well_formed_signature_verifies(signer):
    workspace_id, headers, _ = signer
    assert verify(workspace_id, headers).workspace_id == workspace_id


@pytest.mark.parametrize("change", [
    lambda t: "+" + t, lambda t: "-" + t, lambda t: t + ".0", lambda t: t + ".9", lambda t: " " + t,
    lambda t: t + " ", lambda t: t + "\t", lambda t: t + "e0", lambda t: t[:5] + "_" + t[5:],
    lambda t: "".join(chr(0x0660 + int(digit)) for digit in t),  # Arabic-Indic digits, which float() reads
])
def test_a_timestamp_other_than_ascii_digits_is_refused_naming_the_rule(signer, change):
    workspace_id, headers, _ = signer
    value = change(headers["webhook-timestamp"])
    message = refusal(workspace_id, headers, **{"webhook-timestamp": value})
    assert "webhook-timestamp" in message and "ASCII digits" in message, (value, message)


def test_a_timestamp_with_leading_zeros_is_digits_and_verifies(signer):
    # The reference reads ^[0-9]+$ as the number it writes; the signature covers the number.
    workspace_id, headers, _ = signer
    assert verify(workspace_id, headers, **{"webhook-timestamp": "0" + headers["webhook-timestamp"]})


def test_a_timestamp_of_many_digits_is_outside_the_window_not_an_error(signer):
    workspace_id, headers, _ = signer
    assert "5 minutes" in refusal(workspace_id, headers, **{"webhook-timestamp": "9" * 5000})


@pytest.mark.parametrize("change", [
    lambda s: s + "=",                      # padding past the multiple of 4
    lambda s: s.rstrip("="),                # padding left out
    lambda s: s[:10] + "!" + s[10:],        # a character outside the alphabet, which lenient decoders skip
    lambda s: s[:10] + "." + s[10:],
    lambda s: s.replace("=", "") + "==",    # padding that does not fit the length
    lambda s: s[:4] + "=" + s[4:],          # padding inside
    lambda s: "",
])
def test_a_v1_signature_that_is_not_strict_base64_is_refused_naming_the_rule(signer, change):
    workspace_id, headers, _ = signer
    value = "v1," + change(headers["webhook-signature"][3:])
    message = refusal(workspace_id, headers, **{"webhook-signature": value})
    assert "webhook-signature" in message and "base64" in message, (value, message)


@pytest.mark.parametrize("form", ["{0}  {0}", " {0}", "{0} ", "v1 {1}", ",{1}", "{0}\t{0}", "{0},"])
def test_entries_not_separated_by_one_space_or_without_a_version_are_refused(signer, form):
    workspace_id, headers, _ = signer
    good = headers["webhook-signature"]
    value = form.format(good, good[3:])
    message = refusal(workspace_id, headers, **{"webhook-signature": value})
    assert "webhook-signature" in message, (value, message)


def test_entries_of_other_versions_are_ignored_and_a_v1_among_them_verifies(signer):
    workspace_id, headers, _ = signer
    good = headers["webhook-signature"]
    other = "v1," + base64.b64encode(b"\0" * 32).decode()
    for value in (f"v1a,@@,not-base64@@ {good}", f"v2,whatever {good}",
                  f"{other} {good}", f"{good} {other}"):
        assert verify(workspace_id, headers, **{"webhook-signature": value}), value
    assert "no v1 signature" in refusal(workspace_id, headers, **{"webhook-signature": "v1a," + good[3:]})
    assert "does not verify" in refusal(workspace_id, headers, **{"webhook-signature": other})


@pytest.mark.parametrize("webhook_id", ["msg 1", "msg\u00e91", "m" * 257])
def test_a_webhook_id_other_than_1_to_256_printable_ascii_characters_is_refused(signer, webhook_id):
    workspace_id, headers, _ = signer
    message = refusal(workspace_id, headers, **{"webhook-id": webhook_id})
    assert "webhook-id" in message and "256" in message


def test_a_webhook_id_of_256_characters_verifies(signer):
    workspace_id, _, secret = signer
    assert verify(workspace_id, signed(secret, "m" * 256))


def test_a_webhook_id_is_taken_once_per_workspace_until_it_is_forgotten(db):
    first, second = factories.workspace(), factories.workspace()
    now = utcnow()
    with session():
        assert replays.first_receipt(workspace_id=first.workspace_id, webhook_id="msg_1", now=now)
        assert not replays.first_receipt(workspace_id=first.workspace_id, webhook_id="msg_1", now=now)
        assert replays.first_receipt(workspace_id=second.workspace_id, webhook_id="msg_1", now=now)
        later = now + timedelta(seconds=replays.REMEMBER_S - 1)
        assert not replays.first_receipt(workspace_id=first.workspace_id, webhook_id="msg_1", now=later)
        past = now + timedelta(seconds=replays.REMEMBER_S + 1)
        assert replays.first_receipt(workspace_id=first.workspace_id, webhook_id="msg_1", now=past)
        assert not replays.first_receipt(workspace_id=first.workspace_id, webhook_id="msg_1", now=past)


def test_ids_past_remembering_are_deleted_by_the_periodic_purge_and_no_others(db):
    owner, other = factories.workspace(), factories.workspace()
    now = utcnow()
    with session():
        for index in range(3):
            replays.first_receipt(workspace_id=owner.workspace_id, webhook_id=f"old_{index}", now=now)
        replays.first_receipt(workspace_id=other.workspace_id, webhook_id="old", now=now)
        later = now + timedelta(seconds=replays.REMEMBER_S)
        replays.first_receipt(workspace_id=owner.workspace_id, webhook_id="new", now=later)
        assert replays.forget_expired(now=later) == 0  # REMEMBER_S old: still remembered
        assert replays.forget_expired(now=later + timedelta(seconds=1)) == 4
        assert [r.webhook_id for r in ReceivedWebhook.in_workspace(owner.workspace_id)] == ["new"]
        assert ReceivedWebhook.in_workspace(other.workspace_id).count() == 0
