"""The dealer's GPIO panel in parts, each one job (``docs/protocols/gpio-panel.md``).

* :mod:`~drivers.gpio.options` — the panel's options: pins by name, one pin one owner.
* :mod:`~drivers.gpio.debounce` — pure: raw edges with injected times in, presses out.
* :mod:`~drivers.gpio.pins` — opening gpiozero devices on pins, and a technician's
  reason when that fails.
* :mod:`~drivers.gpio.inputs` — the input lines: gpiozero's threads to the loop, one
  debouncer and one timer per line.
* :mod:`~drivers.gpio.lights` — the stack light's lamps: they show what the daemon tells
  them (:class:`~drivers.gpio.lights.SetLights`); what the light means is the daemon's
  (``daemon/table/stack_light.py``).
* :mod:`~drivers.gpio.panel` — the runtime the daemon runs as the device's transport.

The driver class (``drivers/gpio_panel.py``) ties them together and is where the pin
factory is chosen; the simulated dealer and mock pin levels are in ``drivers/sim/gpio_panel.py``.
"""
