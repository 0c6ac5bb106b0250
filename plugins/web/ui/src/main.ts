import "./styles/tokens.css";
import "./styles/base.css";
import { mount } from "svelte";
import App from "./App.svelte";
import { applyTheme } from "./lib/theme.svelte";

applyTheme();
mount(App, { target: document.getElementById("app")! });
