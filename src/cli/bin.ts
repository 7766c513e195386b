// Executable entry of the `tenon` CLI (see tenon.ts).
import { main } from './tenon.js';

process.exitCode = await main(process.argv.slice(2));
