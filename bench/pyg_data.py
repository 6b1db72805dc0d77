"""The graph a bench's export wrote (meta.json and .npy files) as torch
tensors, for the PyG and PyTorch sides of bench/e2e and bench/interop."""
import json
import os


def load(d, extra=()):
    """meta, the dense float32 features, the edge index (messages from a
    row's neighbours to the row) and the int64 tensors of the extra arrays."""
    import numpy as np
    import torch
    meta = json.load(open(os.path.join(d, "meta.json")))
    a = {k: np.load(os.path.join(d, k + ".npy")) for k in ("indptr", "indices", "x_indptr", "x_indices", "x_values", *extra)}
    n = meta["nodes"]
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(a["indptr"]))
    # Row v of the CSR lists v's neighbours: messages flow from them to v.
    ei = torch.from_numpy(np.stack([a["indices"].astype(np.int64), rows]))
    xr = np.repeat(np.arange(n, dtype=np.int64), np.diff(a["x_indptr"]))
    x = torch.zeros(n, meta["features"], dtype=torch.float32)
    x[torch.from_numpy(xr), torch.from_numpy(a["x_indices"].astype(np.int64))] = torch.from_numpy(a["x_values"])
    return meta, x, ei, {k: torch.from_numpy(a[k].astype(np.int64)) for k in extra}
