// Loaded before Azurite (node --require): Azurite stops when its standard input closes.
// The test run that started it (tests/fakes/azurite.py) holds the other end of the pipe, so
// a run that dies, even by SIGKILL, cannot leave an emulator behind.
"use strict";
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
