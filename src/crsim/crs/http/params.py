"""The settings every HTTP adapter shares: the server, deadlines, retries, limits, the API key's
environment variable, and how replies are read (title linking, empty text)."""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, field_validator

from crsim.core.plugins import Params


class HTTPParams(Params):
    """Settings shared by every HTTP adapter."""

    base_url: str = Field(description="Root URL of the CRS server, e.g. http://127.0.0.1:5005")
    timeout_s: float = Field(30.0, gt=0, description="Deadline for one request, body included.")
    connect_timeout_s: float = Field(5.0, gt=0, description="Deadline for opening a connection.")
    max_retries: int = Field(2, ge=0, le=10, description="Retries after connection errors and 5xx replies.")
    retry_backoff_s: float = Field(0.5, ge=0, description="First retry delay; doubles on each retry.")
    retry_unsafe: bool = Field(
        True, description="Also retry when the server may have processed the message (recorded if so)."
    )
    max_concurrency: int = Field(8, ge=1, le=4096, description="Requests in flight to this CRS at once.")
    max_response_bytes: int = Field(1_000_000, ge=1, description="Larger response bodies are an error.")
    api_key_env: str | None = Field(None, description="Environment variable holding the API key, if any.")
    auth_header: str = Field("Authorization", description="Header that carries the API key.")
    auth_scheme: str = Field("Bearer", description="Prefix of the key in that header ('' for none).")
    link_titles: bool = Field(True, description="Link titles in text-only replies to catalogue items.")
    allow_empty_text: bool = Field(False, description="Accept replies with empty text instead of failing.")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("expected an http:// or https:// URL with a host")
        if parts.username or parts.password:
            raise ValueError("credentials in the URL are not allowed; use api_key_env")
        return value.rstrip("/")
