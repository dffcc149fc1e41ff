"""A device the test plays by hand on a real pty: unplug, replug, garbage — through the running daemon."""

from __future__ import annotations

import json
import os
import tty

from daemon_harness import Daemon, endpoints, tablectl, write_config

from daemon.bus.subscriber import Follower


class HandShoe:
    """The shoe end of a pty, behind a stable symlink like /dev/serial/by-id/….

    Unplugging removes the link, as udev removes a by-id link when the adapter goes.
    A link left behind names a /dev/pts/N the kernel hands to the next pty anyone
    opens (another test, another process on the machine), and the daemon, retrying,
    opens that stranger: connected again before the replug, or twice after it.
    """

    def __init__(self, link) -> None:
        self.link = link
        self.master = -1
        self.tty = ""
        self.plug()

    def plug(self) -> None:
        self.master, slave = os.openpty()
        tty.setraw(slave)
        self.tty = os.ttyname(slave)
        os.close(slave)
        tmp = self.link.with_suffix(".new")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(self.tty)
        tmp.replace(self.link)

    def unplug(self) -> None:
        # the link first: the daemon's next attempt must not find a /dev/pts/N reused meanwhile
        self.link.unlink(missing_ok=True)
        os.close(self.master)
        self.master = -1

    def send(self, data: bytes) -> None:
        os.write(self.master, data)


def device(config, name="shoe") -> dict:
    out = tablectl(config, "--json", "devices")
    return next(d for d in json.loads(out.stdout)["devices"] if d["name"] == name)


def test_unplug_replug_and_garbage(tmp_path):
    shoe = HandShoe(tmp_path / "shoe-by-id")
    cfg = write_config(
        tmp_path,
        port=str(shoe.link),
        sim="",
        game="",
        extra="",
    )
    text = cfg.read_text().replace('port = "', 'reconnect_max = 0.3\nport = "', 1)
    text = text.replace("betting_seconds = 0.05\n", "").replace("auto_new_shoe = true\n", "")
    cfg.write_text(text)
    pub, rep = endpoints(cfg)
    d = Daemon(cfg)
    sub = Follower(pub, rep, table="it")
    try:
        d.start()
        sub.until(lambda e: e.type == "device.connected")
        # a flood of garbage: counted as malformed, never a card, the daemon lives on
        shoe.send(
            b"\x00\xff\xfe garbage \x01\x02\r\n" * 50 + b"#" * 5000 + b"\r\n" + b"\x80\x81\r\n"
        )
        shoe.send(b"CUT\r\n")  # a valid frame after the garbage is still read
        evs = sub.until(lambda e: e.type == "alarm.raised")
        assert not any(e.type == "card.dealt" for e in evs)
        info = device(cfg)
        assert info["malformed"] >= 51 and info["health"] == "ok"
        # unplug: the pty master closes, exactly like a USB-serial adapter pulled out
        shoe.unplug()
        dis = sub.until(lambda e: e.type == "device.disconnected")[-1]
        assert dis.data["device"] == "shoe" and dis.data["reason"]
        assert device(cfg)["health"] == "disconnected"
        # replug behind the same name (a new /dev/pts/N): back by itself, no restart
        shoe.plug()
        con = sub.until(lambda e: e.type == "device.connected")[-1]
        assert con.data["device"] == "shoe" and con.data["port"] == shoe.tty
        info = device(cfg)
        assert info["health"] == "ok" and info["reconnects"] == 1 and info["port"] == shoe.tty
        assert d.proc is not None and d.proc.poll() is None
    finally:
        sub.close()
        if shoe.master >= 0:
            shoe.unplug()
        assert d.stop() == 0
        d.close()
