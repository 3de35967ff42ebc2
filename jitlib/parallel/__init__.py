"""Several devices of one program: pmap, its collectives, and the virtual devices
they run on (docs/multi_device.md)."""
