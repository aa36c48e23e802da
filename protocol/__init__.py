"""Sans-IO codecs of grstats: bytes in, frozen dataclasses out.

Imports only the standard library and msgpack; never reads the clock, logs or
reads configuration. Every decode failure is a `ProtocolError`.
"""

from protocol.envelope import (
    DEFAULT_MAX_ENVELOPE_SIZE,
    ENVELOPE_VERSION,
    Envelope,
    MemberInfo,
    decode_envelope,
    encode_envelope,
)
from protocol.errors import ProtocolError
from protocol.gtid import Gtid, GtidSet
from protocol.member_stats import MemberStatsState
from protocol.pipeline_stats import (
    FLOW_CONTROL_DISABLED,
    FLOW_CONTROL_QUOTA,
    MALFORMED_FIXED_HEADER,
    MALFORMED_PAYLOAD_ITEM,
    MALFORMED_PAYLOAD_LENGTH,
    PS_COLUMNS,
    FixedHeader,
    PipelineStats,
    as_ps_unsigned,
    decode_fixed_header,
    decode_pipeline_stats,
    encode_pipeline_stats,
)

__all__ = [
    "DEFAULT_MAX_ENVELOPE_SIZE",
    "ENVELOPE_VERSION",
    "FLOW_CONTROL_DISABLED",
    "FLOW_CONTROL_QUOTA",
    "MALFORMED_FIXED_HEADER",
    "MALFORMED_PAYLOAD_ITEM",
    "MALFORMED_PAYLOAD_LENGTH",
    "PS_COLUMNS",
    "Envelope",
    "FixedHeader",
    "Gtid",
    "GtidSet",
    "MemberInfo",
    "MemberStatsState",
    "PipelineStats",
    "ProtocolError",
    "as_ps_unsigned",
    "decode_envelope",
    "decode_fixed_header",
    "decode_pipeline_stats",
    "encode_envelope",
    "encode_pipeline_stats",
]
