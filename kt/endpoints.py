"""A broker's listeners, as Kafka's KafkaConfig reads and checks them.

`listeners` names the endpoints to bind, `advertised.listeners` what clients and other
brokers are told (by default the same), `listener.security.protocol.map` each listener
name's security protocol, and `inter.broker.listener.name` (or, without it,
`security.inter.broker.protocol`, whose listener has the protocol's name) the listener
that brokers and the controller use between themselves; `control.plane.listener.name`,
when set, the one the controller uses. The parsing is SocketServerConfigs'
listenerListToEndPoints and CoreUtils' checks of it; the cross-key checks are those of
KafkaConfig.validateValues, each with Kafka's message ("requirement failed: " is how
Scala's require words an IllegalArgumentException).

Invariants of `Listeners`: names are unique and upper case, every listener has a
security protocol, the advertised names are a subset of the bound ones, and the
inter-broker and control-plane names are advertised.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kt.errors import InvalidConfigError

# SecurityProtocol's ids, as UpdateMetadata (v1, v2) carries them.
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
PROTOCOL_NAMES = {number: name for name, number in SECURITY_PROTOCOLS.items()}
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
_URI = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")  # URI_PARSE_REGEXP


def require(condition: bool, message: str) -> None:
    """Scala's require in KafkaConfig: an IllegalArgumentException, worded as Kafka's."""
    if not condition:
        raise InvalidConfigError(f"requirement failed: {message}")


@dataclass(frozen=True)
class Endpoint:
    """One listener: `NAME://host:port` (host empty = all interfaces) and its protocol."""

    listener_name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


def parse_protocol_map(text: str) -> dict[str, str]:
    """`listener.security.protocol.map`: `NAME:PROTOCOL,...` (names normalised upper)."""
    protocols: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, colon, protocol = item.partition(":")
        if not colon:
            raise InvalidConfigError(
                "Error parsing configuration property 'listener.security.protocol.map': "
                f"Malformed config entry {item}"
            )
        protocol = protocol.strip()
        if protocol not in SECURITY_PROTOCOLS:
            raise InvalidConfigError(
                f"Invalid security protocol `{protocol}` defined in listener.security.protocol.map"
            )
        protocols[name.strip().upper()] = protocol
    return protocols


def parse_listeners(
    value: str, protocols: Mapping[str, str] | None = None, *, distinct_ports: bool = True
) -> list[Endpoint]:
    """A `listeners` or `advertised.listeners` value; the names must be distinct, and
    (for `listeners`) so must the ports but port 0, unless one host is an IPv4 address
    and the other an IPv6 one."""
    protocols = parse_protocol_map(DEFAULT_PROTOCOL_MAP) if protocols is None else protocols
    endpoints = []
    for item in filter(None, (part.strip() for part in value.strip().split(","))):
        match = _URI.match(item)
        if match is None:
            raise InvalidConfigError(
                f"Error creating broker listeners from '{value}': "
                f"Unable to parse {item} to a broker endpoint"
            )
        name, host, port = match.group(1).upper(), match.group(2), int(match.group(3))
        if not 0 <= port <= 65535:
            raise InvalidConfigError(f"Invalid listener '{item}': port out of range:{port}")
        if name not in protocols:
            raise InvalidConfigError(
                f"Error creating broker listeners from '{value}': "
                f"No security protocol defined for listener {name}"
            )
        endpoints.append(Endpoint(name, host, port, protocols[name]))
    names = [e.listener_name for e in endpoints]
    require(
        len(set(names)) == len(names),
        f"Each listener must have a different name, listeners: {value}",
    )
    if distinct_ports:
        _check_ports(endpoints, value)
    return endpoints


def _check_ports(endpoints: list[Endpoint], value: str) -> None:
    """CoreUtils.listenerListToEndPoints' rule: two listeners may share a port (other than
    0) only when both hosts are IP addresses, one IPv4 and one IPv6."""
    by_port: dict[int, list[Endpoint]] = {}
    for endpoint in endpoints:
        if endpoint.port:
            by_port.setdefault(endpoint.port, []).append(endpoint)
    for port, same in by_port.items():
        if len(same) == 1:
            continue
        with_ip = [_ip_version(e.host) for e in same if _ip_version(e.host)]
        without_ip = len(same) - len(with_ip)
        require(without_ip <= 1, f"Each listener must have a different port, listeners: {value}")
        two_stacks = (f"If you have two listeners on the same port then one needs to be IPv4 "
                      f"and the other IPv6, listeners: {value}, port: {port}")  # fmt: skip
        if len(with_ip) == 2:
            require(sorted(with_ip) == [4, 6], two_stacks)
            if without_ip:
                raise InvalidConfigError(two_stacks)
        elif with_ip:
            raise InvalidConfigError(
                "Each listener must have a different port unless exactly one listener has an "
                f"IPv4 address and the other IPv6 address, listeners: {value}, port: {port}"
            )


def _ip_version(host: str) -> int:
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return 0


@dataclass(frozen=True)
class Listeners:
    """The listeners of one broker, checked as a whole."""

    bound: tuple[Endpoint, ...]
    advertised: tuple[Endpoint, ...]
    inter_broker: str
    control_plane: str | None = None

    @classmethod
    def from_config(cls, values: Mapping[str, object], originals: Mapping[str, str]) -> Listeners:
        protocols = parse_protocol_map(str(values["listener.security.protocol.map"]))
        bound = parse_listeners(str(values["listeners"]), protocols)
        advertised_text = values["advertised.listeners"]
        advertised = (
            parse_listeners(str(advertised_text), protocols, distinct_ports=False)
            if advertised_text is not None
            else bound
        )
        inter_broker = _inter_broker_listener(values, originals, protocols)
        control_plane = values.get("control.plane.listener.name")
        if control_plane is not None:
            control_plane = str(control_plane).upper()
            if control_plane not in protocols:
                raise InvalidConfigError(
                    f"Listener with {control_plane} defined in control.plane.listener.name "
                    "not found in listener.security.protocol.map."
                )
        return cls(tuple(bound), tuple(advertised), inter_broker, control_plane)

    def validate(self) -> None:
        """KafkaConfig.validateValues: the checks of a broker's listeners."""
        advertised = list(dict.fromkeys(e.listener_name for e in self.advertised))
        bound = list(dict.fromkeys(e.listener_name for e in self.bound))
        require(bool(advertised), "There must be at least one broker advertised listener.")
        require(
            self.inter_broker in advertised,
            "inter.broker.listener.name must be a listener "
            "name defined in advertised.listeners. The valid options based on currently "
            f"configured listeners are {','.join(advertised)}",
        )
        require(
            set(advertised) <= set(bound),
            "advertised.listeners listener names must be "
            "equal to or a subset of the ones defined in listeners. Found "
            f"{','.join(advertised)}. The valid options based on the current configuration "
            f"are {','.join(bound)}",
        )
        require(
            all(e.host != "0.0.0.0" for e in self.advertised),
            "advertised.listeners "
            "cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.",
        )
        if self.control_plane is not None:
            require(
                self.control_plane in advertised,
                "control.plane.listener.name must be a "
                "listener name defined in advertised.listeners. The valid options based "
                f"on currently configured listeners are {','.join(advertised)}",
            )
            require(
                self.control_plane != self.inter_broker,
                "control.plane.listener.name, "
                "when defined, should have a different value from the inter broker "
                "listener name. Currently they both have the value "
                f"ListenerName({self.control_plane})",  # Scala's Option.get's toString
            )

    @property
    def controller_listener(self) -> str:
        """The listener the controller reaches brokers on."""
        return self.control_plane or self.inter_broker


def _inter_broker_listener(
    values: Mapping[str, object], originals: Mapping[str, str], protocols: Mapping[str, str]
) -> str:
    """KafkaConfig.getInterBrokerListenerNameAndSecurityProtocol."""
    name = values["inter.broker.listener.name"]
    if name is not None:
        if "security.inter.broker.protocol" in originals:
            raise InvalidConfigError(
                "Only one of inter.broker.listener.name and security.inter.broker.protocol "
                "should be set."
            )
        name = str(name).upper()
        if name not in protocols:
            raise InvalidConfigError(
                f"Listener with name {name} defined in inter.broker.listener.name not found "
                "in listener.security.protocol.map."
            )
        return name
    return str(values["security.inter.broker.protocol"])
