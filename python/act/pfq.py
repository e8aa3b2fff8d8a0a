"""FracTrain's progressive fractional quantization (PFQ, papers/fractrain.txt
Sec. 3.1, Alg. 1): the precision schedule steps up when the training loss
plateaus.

After every epoch, `PlateauSchedule.update(epoch_loss)` computes the
normalized loss difference d = |L_prev - L| / L_peak (L_peak: the largest
epoch loss so far, the "peak magnitude" the paper normalizes by). When the
last `window` differences since the last switch (the paper: five epochs)
are all below eps, the schedule moves to its next stage and eps decays by
alpha (the paper's defaults: eps 0.05, alpha 0.3), so later switches need a
flatter curve. The last stage is kept to the end.
"""


class PlateauSchedule:
    def __init__(self, stages, eps=0.05, alpha=0.3, window=5):
        if not stages:
            raise ValueError("PFQ needs at least one stage")
        if not (eps > 0 and 0 < alpha <= 1 and window >= 1):
            raise ValueError(f"PFQ needs eps > 0, 0 < alpha <= 1, window >= 1; got "
                             f"eps={eps}, alpha={alpha}, window={window}")
        self.stages, self.eps, self.alpha, self.window = list(stages), eps, alpha, window
        self.index = 0
        self.previous = None
        self.peak = 0.0
        self.differences = []  # since the last switch
        self.switches = []  # (epoch, new stage, eps used)
        self.epoch = 0

    @property
    def stage(self):
        return self.stages[self.index]

    def update(self, loss):
        """Records one epoch's loss; returns True when the stage changed."""
        loss = float(loss)
        self.epoch += 1
        self.peak = max(self.peak, abs(loss))
        if self.previous is not None and self.peak > 0:
            self.differences.append(abs(self.previous - loss) / self.peak)
        self.previous = loss
        if (self.index + 1 < len(self.stages) and len(self.differences) >= self.window
                and max(self.differences[-self.window:]) < self.eps):
            self.switches.append((self.epoch, self.stages[self.index + 1], self.eps))
            self.index += 1
            self.eps *= self.alpha
            self.differences = []
            return True
        return False


def parse_stages(text):
    """'3/6,4/8,6/12,8/16' -> [(3, 6), (4, 8), (6, 12), (8, 16)]: forward /
    backward bits per stage."""
    stages = []
    for part in text.split(","):
        f, _, b = part.partition("/")
        stages.append((int(f), int(b or f)))
    return stages


class Stage(tuple):
    """One PFQ stage: `compute` = (forward, backward) bits of the
    contractions' operands (act-quantize-compute) or None (float), `saved` =
    the bits of the saved activations' #act.quant or None (the configured
    encoding)."""

    def __new__(cls, compute, saved):
        return super().__new__(cls, (compute, saved))

    compute = property(lambda self: self[0])
    saved = property(lambda self: self[1])

    def __str__(self):
        text = f"{self.compute[0]}/{self.compute[1]}" if self.compute else ""
        return text + (f"@{self.saved}" if self.saved else "")


def parse_schedule(text):
    """'3/6@2,4/8@4,8/16@8' -> Stages: each 'F/B' (compute), '@S' (saved
    activations at S bits) or 'F/B@S' (both); every stage names the same
    axes."""
    stages = []
    for part in text.split(","):
        compute, _, saved = part.partition("@")
        stage = Stage(parse_stages(compute)[0] if compute else None,
                      int(saved) if saved else None)
        if stage.saved is not None and stage.saved not in (1, 2, 4, 8):
            raise ValueError(f"PFQ stage '{part}': saved bits must be 1, 2, 4 or 8")
        if stage == (None, None) or (stages and (stage.compute is None) !=
                                     (stages[0].compute is None)
                                     or stages and (stage.saved is None) !=
                                     (stages[0].saved is None)):
            raise ValueError(f"PFQ stages '{text}': each stage is F/B, @S or F/B@S, "
                             "the same form throughout")
        stages.append(stage)
    return stages
