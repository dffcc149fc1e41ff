"""The simulated USB card scanner (``drivers/sim/hid_scanner.py``), for ``port = "sim"``.

Its fake backend is driven through real pyusb (``usb.core.find(backend=…)``,
``usb.util``), then under the daemon's real ``UsbTransport`` and
``DeviceRunner``, then inside a real daemon process. No libusb is needed.

Nothing sleeps to synchronise: tests wait on what the code under test
causes, with a guard only against a hang. The two checks that something did
*not* happen (no typing before the transport holds the interface, a read
that blocks without spinning) give it a bounded time to happen.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import errno
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
import usb.core
import usb.util
from daemon_harness import Daemon, endpoints, write_config
from runner_inputs import Inputs

from daemon.bus.subscriber import Follower
from daemon.runtime.config import ConfigError, load
from daemon.runtime.devices import DeviceRunner
from drivers.card_codes import ENCODINGS, encode
from drivers.cards import DECK
from drivers.hid_scanner import HidKeyboardProtocol, HidScannerDriver, HidScannerOptions
from drivers.readings import CardDrawn, CardUnreadable, CutCardOut, Malformed
from drivers.sim.hid_scanner import (
    BOOT_KEYBOARD_REPORT_DESCRIPTOR,
    ScannerBackend,
    ScannerSimulator,
    key_reports,
)

GUARD = 5.0  # seconds: only a hang ever reaches it
VID, PID = 0x05E0, 0x1200


def opts(**kw: Any) -> HidScannerOptions:
    return msgspec.convert({"vendor_id": VID, "product_id": PID, **kw}, HidScannerOptions)


def find(backend: ScannerBackend, **kw: Any) -> Any:
    return usb.core.find(backend=backend, idVendor=VID, idProduct=PID, **kw)


@contextlib.contextmanager
def claimed(backend: ScannerBackend) -> Any:
    """The scanner opened and its interface claimed, as the transport does it."""
    dev = find(backend)
    assert dev is not None
    dev.detach_kernel_driver(0)
    usb.util.claim_interface(dev, 0)
    try:
        yield dev
    finally:
        usb.util.dispose_resources(dev)


# --- the fake backend through real pyusb ------------------------------------------------------


def test_it_enumerates_as_a_hid_boot_keyboard() -> None:
    backend = ScannerBackend(VID, PID, "SCN-7")
    dev = find(backend)
    assert dev is not None and (dev.bus, dev.address) == (1, 7)
    assert (dev.idVendor, dev.idProduct) == (VID, PID)
    assert dev.serial_number == "SCN-7"
    assert dev.manufacturer == "tabled" and "scanner" in dev.product
    cfg = dev.get_active_configuration()
    intf = cfg[(0, 0)]
    assert (intf.bInterfaceClass, intf.bInterfaceSubClass, intf.bInterfaceProtocol) == (3, 1, 1)
    (ep,) = list(intf)
    assert ep.bEndpointAddress == 0x81 and ep.wMaxPacketSize == 8
    assert usb.util.endpoint_direction(ep.bEndpointAddress) == usb.util.ENDPOINT_IN
    assert usb.util.endpoint_type(ep.bmAttributes) == usb.util.ENDPOINT_TYPE_INTR
    device_desc = bytes(dev.ctrl_transfer(0x80, 0x06, 0x0100, 0, 18))
    assert device_desc[8:12] == bytes([0xE0, 0x05, 0x00, 0x12])
    with pytest.raises(usb.core.USBError) as stall:
        dev.ctrl_transfer(0x80, 0x06, 0x0F00, 0, 8)  # a BOS descriptor it does not have
    assert stall.value.errno == errno.EPIPE
    assert find(backend, serial_number="other") is None
    assert usb.core.find(backend=backend, idVendor=0x1234) is None
    usb.util.dispose_resources(dev)
    assert backend.open_handles == 0


def test_options_choose_the_identity_interface_and_endpoint() -> None:
    sim = HidScannerDriver(opts(serial="A1", interface=2, endpoint=0x83)).simulator({})
    dev = find(sim.backend)
    assert dev.serial_number == "A1"
    intf = dev.get_active_configuration()[(0, 0)]
    assert intf.bInterfaceNumber == 2 and [e.bEndpointAddress for e in intf] == [0x83]
    usb.util.dispose_resources(dev)


def test_the_kernel_driver_holds_the_interface_until_detached() -> None:
    backend = ScannerBackend(VID, PID)
    dev = find(backend)
    assert dev.is_kernel_driver_active(0)
    with pytest.raises(usb.core.USBError) as busy:
        usb.util.claim_interface(dev, 0)
    assert busy.value.errno == errno.EBUSY and busy.value.backend_error_code == -6
    dev.detach_kernel_driver(0)
    usb.util.claim_interface(dev, 0)
    assert backend.claimed and not backend.kernel_driver_bound
    with pytest.raises(usb.core.USBError) as busy:
        dev.attach_kernel_driver(0)  # not while we hold it
    assert busy.value.errno == errno.EBUSY
    report_desc = dev.ctrl_transfer(0x81, 0x06, 0x2200, 0, 255)  # HID report descriptor
    assert bytes(report_desc) == BOOT_KEYBOARD_REPORT_DESCRIPTOR and len(report_desc) == 63
    dev.ctrl_transfer(0x21, 0x0B, 0, 0)  # SET_PROTOCOL(boot)
    assert backend.protocol == 0 and dev.ctrl_transfer(0xA1, 0x03, 0, 0, 1).tolist() == [0]
    usb.util.release_interface(dev, 0)
    dev.attach_kernel_driver(0)
    usb.util.dispose_resources(dev)
    assert backend.kernel_driver_bound and not backend.claimed and backend.open_handles == 0
    assert list(backend.calls) == [
        "open",
        "detach 0",
        "claim 0",
        "set_protocol boot",
        "release 0",
        "attach 0",
        "close",
    ]


def test_a_read_times_out_like_libusb_blocking_without_spinning() -> None:
    backend = ScannerBackend(VID, PID)
    with claimed(backend) as dev:
        wall, cpu = time.monotonic(), time.thread_time()
        with pytest.raises(usb.core.USBTimeoutError) as timeout:
            dev.read(0x81, 8, 200)
        wall, cpu = time.monotonic() - wall, time.thread_time() - cpu
    assert timeout.value.errno == errno.ETIMEDOUT and timeout.value.backend_error_code == -7
    assert wall >= 0.19
    assert cpu < 0.1  # the thread slept on the condition: a busy loop would burn ~0.2 s


def test_typed_reports_wake_a_blocked_read() -> None:
    backend = ScannerBackend(VID, PID)
    got: list[bytes] = []
    with claimed(backend) as dev:
        reader = threading.Thread(
            target=lambda: got.extend(bytes(dev.read(0x81, 8, 10_000)) for _ in range(8))
        )
        reader.start()
        assert backend.type_reports(key_reports(b"H10"))
        reader.join(GUARD)
        assert not reader.is_alive()
        buf = array.array("B", bytes(4))
        backend.type_reports(key_reports(b"S"))
        with pytest.raises(usb.core.USBError) as overflow:
            dev.read(0x81, buf, 100)  # a buffer smaller than the report
        assert overflow.value.errno == errno.EOVERFLOW
    assert got == key_reports(b"H10") and backend.reports_read == 9


def test_keys_typed_while_nobody_holds_the_interface_are_lost() -> None:
    backend = ScannerBackend(VID, PID)
    assert not backend.type_reports(key_reports(b"SA"))  # usbhid has it: typed to the console
    assert backend.reports_lost == 6
    with claimed(backend) as dev:
        with pytest.raises(usb.core.USBTimeoutError):
            dev.read(0x81, 8, 20)
        assert backend.type_reports(key_reports(b"SA"))
        assert bytes(dev.read(0x81, 8, 100)) == key_reports(b"SA")[0]


def test_unplug_fails_a_blocked_read_and_replug_re_enumerates() -> None:
    backend = ScannerBackend(VID, PID)
    errors: list[BaseException] = []
    with claimed(backend) as dev:

        def read() -> None:
            try:
                dev.read(0x81, 8, 10_000)
            except usb.core.USBError as exc:
                errors.append(exc)

        reader = threading.Thread(target=read)
        reader.start()
        backend.unplug()
        reader.join(GUARD)
        assert not reader.is_alive()
        with pytest.raises(usb.core.USBError) as gone:
            dev.ctrl_transfer(0xA1, 0x03, 0, 0, 1)
        assert gone.value.errno == errno.ENODEV
    (exc,) = errors
    assert isinstance(exc, usb.core.USBError) and not isinstance(exc, usb.core.USBTimeoutError)
    assert exc.errno == errno.ENODEV and exc.backend_error_code == -4
    assert find(backend) is None and backend.open_handles == 0
    backend.replug()
    dev = find(backend)
    assert dev is not None and dev.address == 8 and dev.is_kernel_driver_active(0)
    usb.util.dispose_resources(dev)


# --- what it types ---------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_every_card_types_a_code_the_driver_reads_back(encoding: str) -> None:
    p = HidKeyboardProtocol(opts(encoding=encoding))
    for i, card in enumerate(DECK):
        letter = "ACBDE"[i % 5]
        readings = []
        for r in key_reports(encode(card, encoding, letter).encode()):  # type: ignore[arg-type]
            readings += p.feed(r, 0.0)
        assert len(readings) == 1 and isinstance(readings[0], CardDrawn)
        assert readings[0].card == card


def test_markers_and_junk() -> None:
    p = HidKeyboardProtocol(opts())
    out = []
    for code in (b"CUT", b"ERR", b"SA!", b"\x00\xff-S\x7fA"):
        for r in key_reports(code):
            out += p.feed(r, 0.0)
    assert out[:3] == [
        CutCardOut(frame=b"CUT"),
        CardUnreadable(frame=b"ERR", code="ERR"),
        CardDrawn(frame=b"SA!", card="AS", face_up=True),
    ]
    assert isinstance(out[3], Malformed) and "unknown key usage" in out[3].reason


def test_sim_options_are_checked() -> None:
    d = HidScannerDriver(opts())
    assert isinstance(d.simulator({"seed": 3, "pace": 0.1}), ScannerSimulator)
    with pytest.raises(ValueError, match="unknown field `sed`"):
        d.simulator({"sed": 3})
    with pytest.raises(ValueError, match="unknown dealer error 'typo'"):
        d.simulator({"errors": ["typo"]})
    with pytest.raises(TypeError, match="pyusb backend"):
        d.simulator({}).attach(object())


# --- under the real UsbTransport and DeviceRunner ---------------------------------------------


def ev(type_: str, **data: Any) -> Any:
    return SimpleNamespace(type=type_, data=data)


@contextlib.asynccontextmanager
async def scanner(sim_options: dict[str, Any] | None = None, **options: Any) -> Any:
    """The simulator, the driver's transport on its backend and a runner, wired as the daemon does."""
    driver = HidScannerDriver(opts(read_timeout_ms=20, **options))
    sim = driver.simulator({"seed": 5, "pace": 0.001, **(sim_options or {})})
    inputs = Inputs()
    runner = DeviceRunner("scanner", driver, inputs)
    runner.on_link.append(lambda up: sim.opened.set() if up else sim.opened.clear())
    t = driver.usb_transport(reconnect_min=0.01, reconnect_max=0.05, backend=sim.backend)
    runner.transport = t
    tasks = [asyncio.create_task(sim.run()), asyncio.create_task(t.run(runner))]
    try:
        yield sim, runner, inputs, t
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        sim.close()


def reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("usb-read")]


async def deal_hand(sim: ScannerSimulator, inputs: Inputs, cards: int) -> None:
    """Betting closes, and the table takes each card as it comes, as a dealer sees it."""
    before = len(inputs.readings(CardDrawn))
    sim.on_events([ev("betting.closed", shoe=1, hand=1)])
    for n in range(1, cards + 1):
        await inputs.until(lambda n=n: len(inputs.readings(CardDrawn)) >= before + n)
        if n < cards:
            sim.on_events([ev("card.dealt", box="player", hand=1)])
    sim.on_events([ev("hand.result", shoe=1, hand=1)])


@pytest.mark.parametrize("encoding", ENCODINGS)
async def test_scanned_cards_are_the_cards_drawn(encoding: str) -> None:
    async with scanner(encoding=encoding) as (sim, runner, inputs, _):
        await inputs.until(lambda: inputs.health() == [("ok", "/dev/bus/usb/001/007")])
        sim.on_events([ev("shoe.started", shoe=1, decks=8, cut_card=14, burn="first-card")])
        await inputs.until(lambda: len(inputs.readings(CardDrawn)) == 1)
        sim.on_events([ev("shoe.burn", shoe=1)])
        await deal_hand(sim, inputs, 5)
        got = inputs.readings(CardDrawn)
        assert [c.card for c in got] == sim.history and len(got) == 6
        if encoding == "boxed":  # the box letters the dealer's position gives
            assert [c.box for c in got[1:]] == ["player", "banker", "player", "banker", "third"]
        assert runner.counters.malformed == 0 and runner.health == "ok"
    assert not reader_threads()
    assert "attach 0" in sim.backend.calls and sim.backend.open_handles == 0


async def test_nothing_is_typed_before_the_transport_holds_the_interface() -> None:
    driver = HidScannerDriver(opts(read_timeout_ms=20))
    sim = driver.simulator({"seed": 5, "pace": 0.001})
    sim.on_events([ev("shoe.started", shoe=1, decks=8, cut_card=14, burn="first-card")])
    dealer = asyncio.create_task(sim.run())
    try:
        await asyncio.sleep(0.05)  # 50 times the dealer's pace
        assert sim.sent == 0 and sim.backend.reports_lost == 0
        inputs = Inputs()
        runner = DeviceRunner("scanner", driver, inputs)
        runner.on_link.append(lambda up: sim.opened.set() if up else sim.opened.clear())
        t = driver.usb_transport(reconnect_min=0.01, backend=sim.backend)
        task = asyncio.create_task(t.run(runner))
        try:
            await inputs.until(lambda: len(inputs.readings(CardDrawn)) == 1)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        assert [c.card for c in inputs.readings(CardDrawn)] == sim.history
        assert sim.backend.reports_lost == 0
    finally:
        dealer.cancel()
        await asyncio.gather(dealer, return_exceptions=True)
        sim.close()


async def test_dealer_errors_come_through_the_keyboard() -> None:
    async with scanner() as (sim, runner, inputs, _):
        await inputs.until(lambda: bool(inputs.health()))
        sim.on_events([ev("shoe.started", shoe=1, decks=8, cut_card=14, burn="first-card")])
        await inputs.until(lambda: len(inputs.readings(CardDrawn)) == 1)
        sim.on_events([ev("shoe.burn", shoe=1)])
        sim.inject("face-up")
        sim.on_events([ev("betting.closed", shoe=1, hand=1)])
        await inputs.until(lambda: len(inputs.readings(CardDrawn)) == 2)
        sim.inject("unreadable")
        sim.on_events([ev("card.dealt", box="player", hand=1)])
        await inputs.until(lambda: any(isinstance(r, CardUnreadable) for r in inputs.readings()))
        sim.inject("garbage")
        sim.inject("repeat")
        sim.on_events([ev("card.held", hand=1)])
        await inputs.until(lambda: len(inputs.readings(CardDrawn)) == 4)  # the repeat: twice
        readings = inputs.readings()
    burn, face_up, again, repeat = inputs.readings(CardDrawn)
    assert burn.card == sim.history[0] and not burn.face_up
    assert face_up.face_up and face_up.card == sim.history[1]
    assert CardUnreadable(frame=b"ERR", code="ERR") in readings  # history[2], unread
    assert again == repeat and repeat.card == sim.history[3]
    # the garbage: junk typed before the card, dropped whole (counted, never a card)
    assert runner.counters.malformed >= 1 and runner.last_malformed is not None
    assert "code dropped" in runner.last_malformed[0]


async def test_unplug_and_replug_through_the_runner() -> None:
    async with scanner() as (sim, runner, inputs, t):
        await inputs.until(lambda: inputs.health() == [("ok", "/dev/bus/usb/001/007")])
        assert sim.opened.is_set()
        sim.on_events([ev("shoe.started", shoe=1, decks=8, cut_card=14, burn="first-card")])
        await inputs.until(lambda: len(inputs.readings(CardDrawn)) == 1)

        sim.unplug()
        await inputs.until(lambda: len(inputs.health()) == 2)
        assert inputs.health()[1] == ("disconnected", None)
        assert runner.health == "disconnected" and "unplugged" in runner.reason
        assert not sim.opened.is_set()

        sim.replug()  # back at a new bus address, found again by its ids
        await inputs.until(lambda: len(inputs.health()) == 3)
        assert inputs.health()[2] == ("ok", "/dev/bus/usb/001/008")
        assert runner.health == "ok" and sim.opened.is_set()
        assert t.reconnects == 1 and runner.counters.reconnects == 1
        sim.on_events([ev("card.dealt", box="burn", hand=0)])  # the burn goes on
        await inputs.until(lambda: len(inputs.readings(CardDrawn)) == 2)
        assert [c.card for c in inputs.readings(CardDrawn)] == sim.history
    assert not reader_threads()


# --- the config and the daemon ---------------------------------------------------------------


def scanner_config(tmp: Path, sim: str = "seed = 3\npace = 0.005\n") -> Path:
    cfg = write_config(tmp, sim=sim)
    text = cfg.read_text().replace('driver = "shoe-line"', 'driver = "hid-scanner"')
    text = text.replace('name = "shoe"', 'name = "scanner"')
    text = text.replace(
        '[devices.options]\nencoding = "rank-suit"',
        '[devices.options]\nvendor_id = "05e0"\nproduct_id = "1200"\nread_timeout_ms = 50',
    )
    cfg.write_text(text)
    return cfg


def test_config_checks_the_scanner_sim(tmp_path: Path) -> None:
    s = load(scanner_config(tmp_path))
    assert s.config.devices[0].port == "sim"
    with pytest.raises(ConfigError, match=r"devices\[0\]\.sim\.\w+: unknown key"):
        load(scanner_config(tmp_path, sim="sed = 3\n"))


def test_daemon_reads_the_simulated_scanner(tmp_path: Path) -> None:
    cfg = scanner_config(tmp_path)
    pub, rep = endpoints(cfg)
    d = Daemon(cfg)
    follower = Follower(pub, rep, table="it")
    try:
        d.start()
        evs = follower.until(lambda e: e.type == "hand.result", timeout=20)
        connected = [e for e in evs if e.type == "device.connected"]
        assert connected and connected[0].data["port"] == "/dev/bus/usb/001/007"
        cards = [e for e in evs if e.type == "card.dealt"]
        assert cards and all(e.data["device"] == "scanner" for e in cards)
        result = evs[-1].data
        dealt = [e.data["card"] for e in cards if e.data["hand"] == result["hand"]]
        assert sorted(dealt) == sorted(result["player"] + result["banker"])
        assert d.stop() == 0
    finally:
        follower.close()
        d.close()
    log = d.log.read_text()
    assert "USB device connected" in log and "kernel driver reattached" in log


# --- the shuffler simulator's first shuffle (config/baccarat-studio.toml) ---------------------


@pytest.mark.parametrize(
    ("table", "follow", "shuffles"),
    [
        ({"phase": "no-shoe", "shoe": 0}, True, 1),
        ({"phase": "shoe-ended", "shoe": 3}, True, 1),
        ({"phase": "dealing", "shoe": 3}, True, 0),
        ({"phase": "no-shoe", "shoe": 0}, False, 0),
    ],
)
async def test_the_shuffler_sim_shuffles_at_start_up_only_without_a_shoe(
    table: dict[str, Any], follow: bool, shuffles: int
) -> None:
    from drivers.sim.shuffler import ShufflerSimulator

    sent: list[bytes] = []
    opened = asyncio.Event()
    opened.set()
    sim = ShufflerSimulator(shuffle_time=0.002, follow_table=follow)
    sim.attach(SimpleNamespace(opened=opened, write=sent.append))
    sim.resume(table)
    if shuffles:
        assert sim._task is not None
        await asyncio.wait_for(sim._task, GUARD)
        assert [f[1:2] for f in sent] == [b"S", b"C"] and sim.state == "READY"
    assert sim.shuffles == shuffles
