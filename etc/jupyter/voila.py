# make demo's Voila, and the tests' (voila.json beside this file has the template and the extensions
# left out). Voila reads both files; this one holds what JSON cannot say, or what needs no JSON.

import logging


def _can_encrypt():
    import zmq
    from jupyter_client.manager import KernelManager
    return "transport_encryption" in KernelManager.class_trait_names() and zmq.has("curve")


# "Notebook playground.ipynb is not trusted", on every page a student opens (thirty in a class):
# trust is about showing a notebook's saved HTML and JavaScript, which Voila does not (it runs the
# notebook for each page). Other warnings and errors stay.
class NoTrustLines(logging.Filter):
    def filter(self, record):
        return "is not trusted" not in record.getMessage()


c.Voila.logging_config = {  # noqa: F821 (c: the config object traitlets runs this file with)
    "filters": {"asyncps": {"()": NoTrustLines}},
    "handlers": {"console": {"filters": ["asyncps"]}},
}

# The kernels' messages travel over TCP on 127.0.0.1; each kernel otherwise warns, on every page,
# that they are not encrypted. CurveZMQ keys, made per kernel by Voila's kernel manager, encrypt them.
# (only where jupyter_client has the setting and pyzmq can encrypt: elsewhere as before)
if _can_encrypt():
    c.KernelManager.transport_encryption = "auto"  # noqa: F821
