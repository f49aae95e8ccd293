/** Every case, in the order a run takes them: profiles last, after the targets are computed. */
import * as ticks from './ticks.mjs';
import * as nodeExporter from './node-exporter.mjs';
import * as exporter from './exporter.mjs';
import * as configLoad from './config-load.mjs';
import * as steady from './steady.mjs';
import * as steadyCost from './steady-cost.mjs';
import * as connections from './connections.mjs';
import * as profiles from './profiles.mjs';

export const CASES = [ticks, nodeExporter, exporter, configLoad, steady, steadyCost, connections, profiles];

/** Where the targets come, in the run and in the printed tables: before this case. */
export const TARGETS_BEFORE = profiles;
