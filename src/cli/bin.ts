#!/usr/bin/env node
// Executable entry of the `tenon` CLI (see tenon.ts): package.json `bin` points at its build,
// dist/workers/tenon.js, which keeps this `#!` line and is made executable (vite.node.config.ts).
import { main } from './tenon.js';

process.exitCode = await main(process.argv.slice(2));
