// asciinema-player and its stylesheet, loaded with the first recording played (never with
// the sign-in screen or the lists).
import "asciinema-player/dist/bundle/asciinema-player.css";

export { create } from "asciinema-player";
export type { Player } from "asciinema-player";
