"""The JSON network format's Python API (dlprimitives' format, seed 003).

    import frame_mlir.network as fn
    net = fn.load("testdata/networks/lenet_digits.json", seed=0)
    trainer = net.trainer(fn.SGD(0.1, momentum=0.9))
    outputs = trainer.step({"data": x, "label": y})

See `docs/network-format.md`.
"""

from frame_mlir.frontends.network.model import SGD, Adam, Network, NetworkWarning, Trainer, load

__all__ = ["SGD", "Adam", "Network", "NetworkWarning", "Trainer", "load"]
