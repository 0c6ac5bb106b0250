"""The pack's hook: the ``telegram``, ``slack`` and ``webhook`` notification channels.

All three post over HTTP(S) through ``kernel.outbound``, which
checks the destination against the target network policy, connects to the
approved address, verifies TLS certificates and applies timeouts.

Pack option (``[plugins.chat]`` in the config file): ``telegram_api_base``, the
Bot API's base URL (default ``https://api.telegram.org``), e.g. for a local Bot
API server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import quote, urlsplit

from hostgate import (
    ChannelSpec,
    InvalidInput,
    KernelAPI,
    NotificationMessage,
    RemoteAuthFailed,
    RemoteError,
    hookimpl,
)
from pydantic import BaseModel, ConfigDict, Field, field_validator

TELEGRAM_API = "https://api.telegram.org"
TELEGRAM_TEXT_LIMIT = 4096
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
FORBIDDEN_HEADERS = {"host", "content-length", "transfer-encoding", "connection"}


def _http_url(value: str) -> str:
    value = value.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL with a host")
    if any(ch == " " or not ch.isprintable() for ch in value):
        raise ValueError("must not contain spaces, line breaks or control characters")
    return value


class TelegramConfig(BaseModel):
    """``{botToken, chatId}``; a rule's action may name other chat ids."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # Any non-empty token without whitespace: Telegram's format is its own business,
    # and "send a test" is the real check (the token is quoted into the URL path).
    bot_token: str = Field(
        alias="botToken",
        max_length=1000,
        pattern=r"^\S+$",
        description="The token @BotFather gave the bot (stored encrypted)",
    )
    chat_id: str = Field(
        default="",
        alias="chatId",
        max_length=100,
        description="Chat to send to when a rule names none",
    )

    @field_validator("chat_id", mode="before")
    @classmethod
    def _chat_id(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value.strip() if isinstance(value, str) else value


class SlackConfig(BaseModel):
    """``{webhookUrl}``: a Slack incoming-webhook URL."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    webhook_url: str = Field(
        alias="webhookUrl",
        min_length=1,
        max_length=2000,
        description="A Slack incoming-webhook URL (stored encrypted)",
    )

    @field_validator("webhook_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value)


class WebhookConfig(BaseModel):
    """``{url, method, headers}``; header values that look secret are stored encrypted."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    url: str = Field(
        min_length=1, max_length=2000, description="http or https URL the JSON is sent to"
    )
    method: Literal["POST", "PUT", "PATCH"] = Field(default="POST", description="HTTP method")
    headers: dict[str, str] = Field(
        default_factory=dict,
        max_length=50,
        description="Sent with every request; values of Authorization, Cookie and names with "
        "auth, token, secret, key, password or session are stored encrypted",
    )

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value)

    @field_validator("method", mode="before")
    @classmethod
    def _method(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, item in value.items():
            if not HEADER_NAME.match(name) or name.lower() in FORBIDDEN_HEADERS:
                raise ValueError(f"{name!r} is not a header name hostgate may set")
            if "\r" in item or "\n" in item or len(item) > 4000:
                raise ValueError(f"the value of {name} must be one line of at most 4000 chars")
        return value


def _failure(service: str, response: Any) -> RemoteError:
    text = response.text.strip()
    excerpt = " ".join(text.split())[:200]
    suffix = f": {excerpt}" if excerpt else ""
    return RemoteError(f"{service} answered HTTP {response.status}{suffix}")


async def send_telegram(
    kernel: KernelAPI, config: Mapping[str, Any], message: NotificationMessage
) -> None:
    """``POST <api>/bot<token>/sendMessage`` once per chat id."""
    settings = TelegramConfig.model_validate(dict(config))
    chats = [c for c in message.recipients if c] or ([settings.chat_id] if settings.chat_id else [])
    if not chats:
        raise InvalidInput(
            "No Telegram chat id: set chatId on the channel or name chat ids in the rule"
        )
    base = str(kernel.config.plugin("chat").get("telegram_api_base") or TELEGRAM_API)
    url = f"{base.rstrip('/')}/bot{quote(settings.bot_token, safe=':')}/sendMessage"
    text = f"{message.subject}\n\n{message.text}"
    if len(text) > TELEGRAM_TEXT_LIMIT:
        text = text[: TELEGRAM_TEXT_LIMIT - 1] + "…"
    for chat in chats:
        response = await kernel.outbound.request(
            "POST",
            url,
            json={"chat_id": chat, "text": text, "disable_web_page_preview": True},
            purpose="webhook",
        )
        answer = response.json()
        ok = isinstance(answer, dict) and answer.get("ok") is True
        if response.status == 200 and ok:
            continue
        description = answer.get("description") if isinstance(answer, dict) else None
        if response.status == 401:
            raise RemoteAuthFailed("Telegram rejected the bot token (HTTP 401)")
        if description:
            raise RemoteError(f"Telegram answered HTTP {response.status}: {description}")
        raise _failure("Telegram", response)


async def send_slack(
    kernel: KernelAPI, config: Mapping[str, Any], message: NotificationMessage
) -> None:
    """``POST <webhookUrl>`` with ``{text}``."""
    settings = SlackConfig.model_validate(dict(config))
    response = await kernel.outbound.request(
        "POST",
        settings.webhook_url,
        json={"text": f"*{message.subject}*\n{message.text}"},
        purpose="webhook",
    )
    if not 200 <= response.status < 300:
        raise _failure("Slack", response)


def webhook_body(message: NotificationMessage) -> dict[str, Any]:
    """The JSON a webhook receives: the rendered message and the event (or digest)."""
    body: dict[str, Any] = {
        "rule": message.rule_name,
        "subject": message.subject,
        "text": message.text,
    }
    event = dict(message.event)
    if event.get("digest"):
        body["digest"] = {k: event.get(k) for k in ("cadence", "periodStart", "periodEnd", "count")}
        body["events"] = list(event.get("events") or [])
    else:
        body["event"] = event
    return body


async def send_webhook(
    kernel: KernelAPI, config: Mapping[str, Any], message: NotificationMessage
) -> None:
    """``<method> <url>`` with the configured headers and a JSON body."""
    settings = WebhookConfig.model_validate(dict(config))
    headers = {"Content-Type": "application/json", "User-Agent": "hostgate-notifications"}
    for name, value in settings.headers.items():
        for existing in [k for k in headers if k.lower() == name.lower()]:
            del headers[existing]
        headers[name] = value
    response = await kernel.outbound.request(
        settings.method,
        settings.url,
        json=webhook_body(message),
        headers=headers,
        purpose="webhook",
    )
    if not 200 <= response.status < 300:
        raise _failure("The webhook", response)


@hookimpl
def register_channels() -> Sequence[ChannelSpec]:
    """``telegram``, ``slack`` and ``webhook``."""
    return [
        ChannelSpec(
            type="telegram",
            title="Telegram",
            config_model=TelegramConfig,
            send=send_telegram,
            secret_fields=("botToken",),
        ),
        ChannelSpec(
            type="slack",
            title="Slack",
            config_model=SlackConfig,
            send=send_slack,
            secret_fields=("webhookUrl",),
        ),
        ChannelSpec(
            type="webhook",
            title="Webhook",
            config_model=WebhookConfig,
            send=send_webhook,
        ),
    ]
