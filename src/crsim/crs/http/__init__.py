"""CRSs reached over HTTP: CRS Arena, IAI MovieBot and the generic JSON protocol."""

from crsim.crs.http.crs_arena import CRSArenaCRS
from crsim.crs.http.errors import (
    CRSConnectionError,
    CRSHTTPError,
    CRSInvalidResponse,
    CRSRedirectError,
    CRSResponseTooLarge,
    CRSStatusError,
    CRSTimeoutError,
)
from crsim.crs.http.generic import GenericHTTPCRS
from crsim.crs.http.moviebot import MovieBotCRS
from crsim.crs.http.params import HTTPParams

__all__ = [
    "CRSArenaCRS",
    "CRSConnectionError",
    "CRSHTTPError",
    "CRSInvalidResponse",
    "CRSRedirectError",
    "CRSResponseTooLarge",
    "CRSStatusError",
    "CRSTimeoutError",
    "GenericHTTPCRS",
    "HTTPParams",
    "MovieBotCRS",
]
