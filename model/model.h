// The domain model shared by the core, the log codec and the adapters: plain values with
// integer units, ordered containers, and the Event / Command / Decision unions. Each topic has
// its own header; this one brings them all.
#pragma once

#include "model/catalog.h"
#include "model/commands.h"
#include "model/decisions.h"
#include "model/events.h"
#include "model/kube.h"
#include "model/units.h"
