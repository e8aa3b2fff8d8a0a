"""A user's recurrent model for compile time (docs/benchmarks.md, "Repeated
code: an unrolled LSTM"): a 2-layer LSTM classifier over `ACT_LSTM_STEPS`
tokens (default 64). AOTAutograd unrolls the recurrence, so the step grows
with the sequence.

    cd python && python3 -m act.export ../bench/compile_time/lstm.py:make --batch 8 -o /tmp/lstm
    build/bin/act-opt /tmp/lstm/make.mlir -act-insert-encode-decode=policy=none -o none.mlir
    build/bin/act-run none.mlir --inputs=<the manifest's inputs> --repeat=5
"""

import os

import torch
import torch.nn as nn


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True)
        self.head = nn.Linear(24, 5)

    def forward(self, t):
        h, _ = self.lstm(self.emb(t))
        return self.head(h[:, -1])


def make(batch):
    steps = int(os.environ.get("ACT_LSTM_STEPS", "64"))
    return (LSTMClassifier(), torch.randint(0, 50, (batch, steps)),
            torch.randint(0, 5, (batch,)))
