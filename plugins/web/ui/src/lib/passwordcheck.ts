// zxcvbn-ts with the common dictionaries and English messages. Loaded only by
// password.ts's dynamic import (its own chunk, never with the sign-in screen).
import { ZxcvbnFactory } from "@zxcvbn-ts/core";
import { adjacencyGraphs, dictionary } from "@zxcvbn-ts/language-common";
import { translations } from "@zxcvbn-ts/language-en";

const factory = new ZxcvbnFactory({ dictionary, graphs: adjacencyGraphs, translations });

/** zxcvbn's score and feedback for `password`. */
export function check(password: string, userInputs: string[]) {
  return factory.check(password, userInputs);
}
